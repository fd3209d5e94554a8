// The MatMul driver: the ISA's table chosen once, activations quantized once
// per call as the weight format's traits ask, rows split across threads.
#include "tensor/kernels.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>

#include "tensor/cpu_features.h"
#include "tensor/kernel_table.h"

namespace brisk {
namespace {

// The matmul op's variant table, indexed by KernelIsa.
const KernelTable* (*const kTables[kNumKernelIsas])() = {GetScalarTable, GetAvx2Table,
                                                         GetAvx512Table};

const KernelTable& Active() {
  static const KernelTable* table = kTables[SelectedKernelIsaIndex()]();
  return *table;
}

// The traits of a weight format with matmul kernels, or null.
const FormatTraits* WeightFormat(DType t) {
  const FormatTraits* f = FindFormat(static_cast<uint32_t>(t));
  return f != nullptr && f->kernel_slot >= 0 ? f : nullptr;
}

int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// One weight of a (possibly fused) matmul: GGUF rows (row_bytes apart) or
// packed panels, and where its outputs go.
struct Part {
  const uint8_t* w = nullptr;
  int64_t row_bytes = 0;
  int64_t rows = 0;
  float* y = nullptr;
  int64_t ldy = 0;
};

// Runs matmuls with `table` that share the weight format, k, layout
// (`packed`: whole panels) and input x: x is quantized once, then one
// parallel region splits the parts' rows, concatenated, into contiguous runs
// per thread. A row's arithmetic does not depend on how rows are split.
void RunParts(const KernelTable& table, const FormatTraits& format, bool packed, int64_t k,
              const float* x, int64_t ldx, int64_t n_tokens, const Part* parts, int n_parts,
              ThreadPool& pool, MatMulScratch& scratch) {
  if (n_tokens <= 0) return;
  const int n_threads = pool.size();
  const int64_t tmp_bytes = AlignUp(BRISK_MATMUL_TMP_BYTES(k, n_tokens), 64);
  MatMulTask base;
  base.k = k;
  base.n_tokens = n_tokens;
  const bool quantized = format.act_group > 0;  // else the kernels read x as floats
  const int G = format.act_group;
  const int64_t nb = quantized ? k / G : 0, q_stride = AlignUp(k, 64);
  const int64_t scales_bytes = AlignUp(n_tokens * nb * 4, 64);
  const int64_t act_bytes = quantized ? n_tokens * q_stride + 2 * scales_bytes : 0;
  uint8_t* buf = scratch.Reserve(static_cast<size_t>(act_bytes + tmp_bytes * n_threads));
  if (!quantized) {
    base.x = x;
    base.ldx = ldx;
  } else {
    auto* q = reinterpret_cast<int8_t*>(buf);
    auto* d = reinterpret_cast<float*>(buf + n_tokens * q_stride);
    uint8_t* aux = buf + n_tokens * q_stride + scales_bytes;
    const int zp = format.act_zero_point;
    auto quantize = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        table.quantize_acts(x + t * ldx, k, G, zp, q + t * q_stride, d + t * nb, aux + t * nb * 4);
    };
    if (n_threads == 1 || n_tokens * k < (1 << 15)) {
      quantize(0, n_tokens);
    } else {
      pool.ParallelFor(n_tokens, 1, quantize);
    }
    base.xq.q = q;
    base.xq.q_stride = q_stride;
    base.xq.d = d;
    base.xq.aux = aux;
    base.xq.nb = nb;
    base.xq.group = G;
    base.xq.zero_point = zp;
  }
  // Threads take contiguous runs of `grain` rows, so each streams its own rows.
  const int64_t grain = table.panel_rows > 1 ? table.panel_rows : 4;
  int64_t units = 0;
  for (int i = 0; i < n_parts; ++i) units += (parts[i].rows + grain - 1) / grain;
  const FormatKernels& kernels = table.formats[format.kernel_slot];
  const int64_t panel_bytes = packed ? kernels.panel_bytes(k) : 0;
  const MatMulFn fn = packed ? kernels.matmul_packed : kernels.matmul;
  auto task = [&](int t, int nt) {
    const int64_t g0 = units * t / nt, g1 = units * (t + 1) / nt;
    int64_t first = 0;  // global index of the part's first unit
    for (int i = 0; i < n_parts && first < g1; ++i) {
      const Part& p = parts[i];
      const int64_t n_units = (p.rows + grain - 1) / grain;
      const int64_t u0 = std::max<int64_t>(g0 - first, 0);
      const int64_t u1 = std::min<int64_t>(g1 - first, n_units);
      first += n_units;
      const int64_t r0 = u0 * grain, r1 = std::min(u1 * grain, p.rows);
      if (r0 >= r1) continue;
      MatMulTask mt = base;
      mt.row_bytes = p.row_bytes;
      mt.ldy = p.ldy;
      mt.rows = r1 - r0;
      mt.w = packed ? p.w + u0 * panel_bytes : p.w + r0 * p.row_bytes;
      mt.y = p.y + r0;
      mt.tmp = buf + act_bytes + tmp_bytes * t;
      fn(&mt);
    }
  };
  if (n_threads == 1 || units < 2) {
    task(0, 1);
  } else {
    pool.Run(task);
  }
}

void Run(const KernelTable& table, const FormatTraits& format, const uint8_t* w, int64_t row_bytes,
         bool packed, int64_t rows, int64_t k, const float* x, int64_t ldx, int64_t n_tokens,
         float* y, int64_t ldy, ThreadPool& pool, MatMulScratch& scratch) {
  if (rows <= 0) return;
  const Part part{w, row_bytes, rows, y, ldy};
  RunParts(table, format, packed, k, x, ldx, n_tokens, &part, 1, pool, scratch);
}

void RunRaw(const KernelTable& table, DType wtype, const void* w, int64_t rows, int64_t k,
            const float* x, int64_t ldx, int64_t n_tokens, float* y, int64_t ldy, ThreadPool& pool,
            MatMulScratch& scratch) {
  const FormatTraits* format = WeightFormat(wtype);
  const int64_t row_bytes = RowBytes(wtype, k);
  assert(format != nullptr && row_bytes > 0 && "MatMul: unsupported type or bad k");
  if (format == nullptr || row_bytes <= 0) return;
  Run(table, *format, static_cast<const uint8_t*>(w), row_bytes, false, rows, k, x, ldx, n_tokens,
      y, ldy, pool, scratch);
}

}  // namespace

MatMulScratch::MatMulScratch() = default;
MatMulScratch::~MatMulScratch() { std::free(data_); }

uint8_t* MatMulScratch::Reserve(size_t bytes) {
  if (bytes > size_) {
    std::free(data_);
    size_t n = (bytes + bytes / 4 + 4095) / 4096 * 4096;
    data_ = static_cast<uint8_t*>(std::aligned_alloc(64, n));
    assert(data_ != nullptr);
    size_ = n;
  }
  return data_;
}

const char* ActiveKernelVariant() { return Active().name; }
const char* KernelTableName(const KernelTable& table) { return table.name; }

std::vector<const KernelTable*> AvailableKernelTables() {
  std::vector<const KernelTable*> out;
  for (int i = 0; i < kNumKernelIsas; ++i)
    if (CpuCanRun(static_cast<KernelIsa>(i))) out.push_back(kTables[i]());
  return out;
}

void MatMulWith(const KernelTable& table, DType wtype, const void* w, int64_t rows, int64_t k,
                const float* x, int64_t ldx, int64_t n_tokens, float* y, int64_t ldy,
                ThreadPool& pool, MatMulScratch& scratch) {
  RunRaw(table, wtype, w, rows, k, x, ldx, n_tokens, y, ldy, pool, scratch);
}

Expected<MatMulWeight> PrepareMatMulWeightFor(const KernelTable& table, DType type, const void* w,
                                              int64_t rows, int64_t k) {
  const FormatTraits* format = WeightFormat(type);
  if (format == nullptr)
    return Unimplemented("no matmul kernel for weight type {}", DTypeName(type));
  const int64_t row_bytes = RowBytes(type, k);
  if (rows <= 0 || k <= 0 || row_bytes <= 0) {
    return InvalidArgument(
        "bad {} weight shape {} x {} (k must be a positive multiple of the "
        "block size)",
        DTypeName(type), rows, k);
  }
  MatMulWeight mw;
  mw.type = type;
  mw.rows = rows;
  mw.k = k;
  mw.gguf = w;
  const FormatKernels& kernels = table.formats[format->kernel_slot];
  const int64_t panel_bytes = kernels.panel_bytes != nullptr ? kernels.panel_bytes(k) : 0;
  if (panel_bytes > 0 && kernels.pack_panel != nullptr && kernels.matmul_packed != nullptr) {
    const int64_t P = table.panel_rows;
    const int64_t panels = (rows + P - 1) / P;
    std::shared_ptr<uint8_t[]> buf(
        static_cast<uint8_t*>(std::aligned_alloc(64, AlignUp(panels * panel_bytes, 64))),
        [](uint8_t* p) { std::free(p); });
    if (!buf) return ResourceExhausted("out of memory repacking a {}x{} weight", rows, k);
    const auto* src = static_cast<const uint8_t*>(w);
    for (int64_t p = 0; p < panels; ++p) {
      int64_t valid = rows - p * P < P ? rows - p * P : P;
      kernels.pack_panel(src + p * P * row_bytes, row_bytes, valid, k, buf.get() + p * panel_bytes);
    }
    mw.packed = std::move(buf);
    mw.packed_for = &table;
  }
  return mw;
}

Expected<MatMulWeight> PrepareMatMulWeight(DType type, const void* w, int64_t rows, int64_t k,
                                           bool allow_repack) {
  if (!allow_repack) return PrepareMatMulWeightFor(*GetScalarTable(), type, w, rows, k);
  return PrepareMatMulWeightFor(Active(), type, w, rows, k);
}

void MatMulWith(const KernelTable& table, const MatMulWeight& w, const float* x, int64_t ldx,
                int64_t n_tokens, float* y, int64_t ldy, ThreadPool& pool, MatMulScratch& scratch) {
  if (w.packed != nullptr && w.packed_for == &table) {
    Run(table, FormatOf(w.type), w.packed.get(), 0, true, w.rows, w.k, x, ldx, n_tokens, y, ldy,
        pool, scratch);
  } else {
    RunRaw(table, w.type, w.gguf, w.rows, w.k, x, ldx, n_tokens, y, ldy, pool, scratch);
  }
}

void MatMul(const MatMulWeight& w, const float* x, int64_t ldx, int64_t n_tokens, float* y,
            int64_t ldy, ThreadPool& pool, MatMulScratch& scratch) {
  MatMulWith(Active(), w, x, ldx, n_tokens, y, ldy, pool, scratch);
}

void MatMul(const MatMulWeight& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatMulScratch& scratch) {
  MatMulWith(Active(), w, x, w.k, n_tokens, y, w.rows, pool, scratch);
}

void MatMulFused(std::span<const MatMulOut> outs, const float* x, int64_t ldx, int64_t n_tokens,
                 ThreadPool& pool, MatMulScratch& scratch) {
  if (outs.empty()) return;
  const KernelTable& table = Active();
  const MatMulWeight& w0 = *outs[0].w;
  const bool packed = w0.packed != nullptr && w0.packed_for == &table;
  bool same = outs.size() <= 8;
  for (const MatMulOut& o : outs) {
    const bool p = o.w->packed != nullptr && o.w->packed_for == &table;
    same = same && o.w->type == w0.type && o.w->k == w0.k && p == packed;
  }
  if (!same) {  // mixed types or layouts: one matmul each
    for (const MatMulOut& o : outs) MatMul(*o.w, x, ldx, n_tokens, o.y, o.ldy, pool, scratch);
    return;
  }
  Part parts[8];
  for (size_t i = 0; i < outs.size(); ++i) {
    const MatMulWeight& w = *outs[i].w;
    parts[i].w = packed ? w.packed.get() : static_cast<const uint8_t*>(w.gguf);
    parts[i].row_bytes = packed ? 0 : RowBytes(w.type, w.k);
    parts[i].rows = w.rows;
    parts[i].y = outs[i].y;
    parts[i].ldy = outs[i].ldy;
  }
  RunParts(table, FormatOf(w0.type), packed, w0.k, x, ldx, n_tokens, parts,
           static_cast<int>(outs.size()), pool, scratch);
}

void F32ToF16Row(const float* src, uint16_t* dst, int64_t n) { Active().f32_to_f16(src, dst, n); }

}  // namespace brisk
