// The weight x activation matmul of the forward pass (GEMV for decode,
// register-tiled GEMM for prefill) and the F32 -> F16 row conversion the KV
// cache stores with. Every kernel has a scalar reference twin; SIMD variants
// (AVX2, AVX-512 VNNI) are picked once at startup (tensor/cpu_features.h).
//
// Weight formats with a MatMul are those whose traits name a kernel slot
// (tensor/format_traits.h, IsMatMulWeightType).
// Rows are laid out exactly as in GGUF: row r of a [rows x k] weight starts at
// (const uint8_t*)w + r * RowBytes(type, k).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tensor/format_traits.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

struct KernelTable;  // one ISA's kernels, see "Variants" below

// Reusable buffers for MatMul, owned by the caller (one per thread that calls
// MatMul). Grows on first use, then never reallocates for the same shapes.
struct MatMulScratch {
  MatMulScratch();
  ~MatMulScratch();
  MatMulScratch(const MatMulScratch&) = delete;
  MatMulScratch& operator=(const MatMulScratch&) = delete;
  // 64-byte aligned buffer of at least `bytes` bytes (contents not kept).
  uint8_t* Reserve(size_t bytes);

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A weight matrix prepared for MatMul at load time. The active variant may
// repack the rows into its own interleaved layout (a copy owned here: the
// same size as the GGUF data, about); otherwise it points at the caller's
// GGUF bytes, which must then outlive it. Decode (GEMV) is much faster on
// repacked rows.
struct MatMulWeight {
  DType type = DType::kF32;
  int64_t rows = 0, k = 0;
  const void* gguf = nullptr;               // original GGUF rows (always valid)
  std::shared_ptr<uint8_t[]> packed;        // repacked rows, or null
  const KernelTable* packed_for = nullptr;  // the table whose layout `packed` is in
};

// Errors: unsupported type (kUnimplemented), k not a multiple of the block
// size or non-positive shape (kInvalidArgument). `allow_repack = false` keeps
// the GGUF layout (no copy).
Expected<MatMulWeight> PrepareMatMulWeight(DType type, const void* w, int64_t rows, int64_t k,
                                           bool allow_repack = true);

// y[t*ldy + r] = sum_i W[r][i] * x[t*ldx + i] for r < w.rows, t < n_tokens
// (ldx >= k, ldy >= rows). x is quantized to 8 bits once as the weight
// format's traits ask (split across threads), then rows are split across the
// pool's threads.
void MatMul(const MatMulWeight& w, const float* x, int64_t ldx, int64_t n_tokens, float* y,
            int64_t ldy, ThreadPool& pool, MatMulScratch& scratch);
// Dense form: ldx = k, ldy = rows.
void MatMul(const MatMulWeight& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatMulScratch& scratch);

// Several weights with the same k applied to the same x in one pass:
// outs[i].y[t*outs[i].ldy + r] = sum_j outs[i].w[r][j] * x[t*ldx + j]. x is
// quantized once and one parallel region covers every weight's rows (q/k/v,
// gate/up). Results are bitwise those of separate MatMul calls. Weights of
// different types or layouts (or more than 8) fall back to one call each.
struct MatMulOut {
  const MatMulWeight* w = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
};
void MatMulFused(std::span<const MatMulOut> outs, const float* x, int64_t ldx, int64_t n_tokens,
                 ThreadPool& pool, MatMulScratch& scratch);

// dst[i] = src[i] as IEEE half, round to nearest even (the active variant).
void F32ToF16Row(const float* src, uint16_t* dst, int64_t n);

// ---- Variants ------------------------------------------------------------------
// "scalar", "avx2" or "avx512": the table every function above uses.
const char* ActiveKernelVariant();

// KernelTable (one ISA's kernels) is defined in tensor/kernel_table.h, for
// tests and benches. Every variant compiled in that this CPU can run, scalar
// first:
std::vector<const KernelTable*> AvailableKernelTables();
const char* KernelTableName(const KernelTable& table);
// MatMul with an explicit table instead of the active one: on GGUF rows
// (raw pointer, no repacking; y[t*ldy + r], x token t at x + t*ldx), or on a
// prepared weight (a weight packed for another table uses its GGUF rows).
void MatMulWith(const KernelTable& table, DType wtype, const void* w, int64_t rows, int64_t k,
                const float* x, int64_t ldx, int64_t n_tokens, float* y, int64_t ldy,
                ThreadPool& pool, MatMulScratch& scratch);
Expected<MatMulWeight> PrepareMatMulWeightFor(const KernelTable& table, DType type, const void* w,
                                              int64_t rows, int64_t k);
void MatMulWith(const KernelTable& table, const MatMulWeight& w, const float* x, int64_t ldx,
                int64_t n_tokens, float* y, int64_t ldy, ThreadPool& pool, MatMulScratch& scratch);

}  // namespace brisk
