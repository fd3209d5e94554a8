// The scalar reference kernel table: plain C++, one group at a time. SIMD
// tables must agree with it up to float summation order.
#include <cmath>
#include <cstring>

#include "tensor/float16.h"
#include "tensor/fp8.h"
#include "tensor/kernel_table.h"

namespace brisk {
namespace {

// ---- Quantized weights: one decoder per format ------------------------------------
// Group g of a GGUF row (the activations' group, QuantActs::group elements)
// as integers v[] with w = dw*v + c. For zero-point formats v is signed
// (q - z) and c = 0; for min formats v = q and c = min.
typedef void (*DecodeGroupFn)(const uint8_t* row, int64_t g, int* v, float* dw, float* c);

void DecodeQ4_0(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  const auto* b = reinterpret_cast<const BlockQ4_0*>(row) + g;
  *dw = HalfToFloat(b->d);
  *c = 0;
  for (int j = 0; j < 16; ++j) {
    v[j] = (b->qs[j] & 0xF) - 8;
    v[j + 16] = (b->qs[j] >> 4) - 8;
  }
}

void DecodeQ4_1(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  const auto* b = reinterpret_cast<const BlockQ4_1*>(row) + g;
  *dw = HalfToFloat(b->d);
  *c = HalfToFloat(b->m);
  for (int j = 0; j < 16; ++j) {
    v[j] = b->qs[j] & 0xF;
    v[j + 16] = b->qs[j] >> 4;
  }
}

void DecodeQ8_0(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  const auto* b = reinterpret_cast<const BlockQ8_0*>(row) + g;
  *dw = HalfToFloat(b->d);
  *c = 0;
  for (int j = 0; j < 32; ++j) v[j] = b->qs[j];
}

void ScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

void DecodeQ4_K(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  // 8 groups of 32 per super-block
  const auto* b = reinterpret_cast<const BlockQ4_K*>(row) + g / 8;
  int j = static_cast<int>(g % 8), sc, m;
  ScaleMinK4(j, b->scales, &sc, &m);
  *dw = HalfToFloat(b->d) * static_cast<float>(sc);
  *c = -HalfToFloat(b->dmin) * static_cast<float>(m);
  const uint8_t* q = b->qs + 32 * (j / 2);
  for (int l = 0; l < 32; ++l) v[l] = (j & 1) ? q[l] >> 4 : q[l] & 0xF;
}

void DecodeQ6_K(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  // 16 groups of 16 per super-block
  const auto* b = reinterpret_cast<const BlockQ6_K*>(row) + g / 16;
  int j = static_cast<int>(g % 16);
  int h = j / 8, quarter = (j % 8) / 2, half = j % 2;  // element 128h + 32*quarter + 16*half
  *dw = HalfToFloat(b->d) * static_cast<float>(b->scales[j]);
  *c = 0;
  const uint8_t* ql = b->ql + 64 * h + (quarter & 1) * 32 + 16 * half;
  const uint8_t* qh = b->qh + 32 * h + 16 * half;
  int lshift = (quarter >= 2) ? 4 : 0, hshift = 2 * quarter;
  for (int l = 0; l < 16; ++l)
    v[l] = (((ql[l] >> lshift) & 0xF) | ((qh[l] >> hshift) & 3) << 4) - 32;
}

// Q5_0 / Q5_1: element j's 5-bit quant.
int Quant5(const uint8_t* qh, const uint8_t* qs, int j) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  return (j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4) | static_cast<int>((h >> j) & 1) << 4;
}

void DecodeQ5_0(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  const auto* b = reinterpret_cast<const BlockQ5_0*>(row) + g;
  *dw = HalfToFloat(b->d);
  *c = 0;
  for (int j = 0; j < 32; ++j) v[j] = Quant5(b->qh, b->qs, j) - 16;
}

void DecodeQ5_1(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  const auto* b = reinterpret_cast<const BlockQ5_1*>(row) + g;
  *dw = HalfToFloat(b->d);
  *c = HalfToFloat(b->m);
  for (int j = 0; j < 32; ++j) v[j] = Quant5(b->qh, b->qs, j);
}

void DecodeIQ4_NL(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  const auto* b = reinterpret_cast<const BlockIQ4_NL*>(row) + g;
  *dw = HalfToFloat(b->d);
  *c = 0;
  for (int j = 0; j < 16; ++j) {
    v[j] = kIQ4NLValues[b->qs[j] & 0xF];
    v[j + 16] = kIQ4NLValues[b->qs[j] >> 4];
  }
}

void DecodeIQ4_XS(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  // 8 groups of 32 per super-block
  const auto* b = reinterpret_cast<const BlockIQ4_XS*>(row) + g / 8;
  const int j = static_cast<int>(g % 8);
  const int lo = (b->scales_l[j / 2] >> (4 * (j % 2))) & 0xF, hi = (b->scales_h >> (2 * j)) & 3;
  const int ls = lo | hi << 4;
  *dw = HalfToFloat(b->d) * static_cast<float>(ls - 32);
  *c = 0;
  const uint8_t* qs = b->qs + 16 * j;
  for (int l = 0; l < 16; ++l) {
    v[l] = kIQ4NLValues[qs[l] & 0xF];
    v[l + 16] = kIQ4NLValues[qs[l] >> 4];
  }
}

void DecodeQ5_K(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  // 8 groups of 32 per super-block
  const auto* b = reinterpret_cast<const BlockQ5_K*>(row) + g / 8;
  int j = static_cast<int>(g % 8), sc, m;
  ScaleMinK4(j, b->scales, &sc, &m);
  *dw = HalfToFloat(b->d) * static_cast<float>(sc);
  *c = -HalfToFloat(b->dmin) * static_cast<float>(m);
  const uint8_t* q = b->qs + 32 * (j / 2);
  for (int l = 0; l < 32; ++l) v[l] = ((q[l] >> (4 * (j & 1))) & 0xF) | ((b->qh[l] >> j) & 1) << 4;
}

// Q3_K / Q2_K: element e = 128h + 32s + l of a super-block sits in bits
// 2s..2s+1 of qs[32h + l]; group (sub-block) j holds e = 16j .. 16j+15.
void DecodeQ3_K(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  // 16 groups of 16 per super-block
  const auto* b = reinterpret_cast<const BlockQ3_K*>(row) + g / 16;
  const int j = static_cast<int>(g % 16);
  const int u = (j < 8 ? b->scales[j] & 0xF : b->scales[j - 8] >> 4) |
                ((b->scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4;
  *dw = HalfToFloat(b->d) * static_cast<float>(u - 32);
  *c = 0;
  for (int l = 0; l < 16; ++l) {
    const int e = 16 * j + l, h = e / 128, s = (e % 128) / 32;
    const int ql = (b->qs[32 * h + e % 32] >> (2 * s)) & 3;
    const int hb = (b->hmask[e % 32] >> (4 * h + s)) & 1;
    v[l] = ql + 4 * hb - 4;
  }
}

void DecodeQ2_K(const uint8_t* row, int64_t g, int* v, float* dw, float* c) {
  // 16 groups of 16 per super-block
  const auto* b = reinterpret_cast<const BlockQ2_K*>(row) + g / 16;
  const int j = static_cast<int>(g % 16);
  *dw = HalfToFloat(b->d) * static_cast<float>(b->scales[j] & 0xF);
  *c = -HalfToFloat(b->dmin) * static_cast<float>(b->scales[j] >> 4);
  for (int l = 0; l < 16; ++l) {
    const int e = 16 * j + l, h = e / 128, s = (e % 128) / 32;
    v[l] = (b->qs[32 * h + e % 32] >> (2 * s)) & 3;
  }
}

template <DecodeGroupFn kDecode>
void MatMulQ(const MatMulTask* t) {
  const int G = t->xq.group;
  const bool has_min = t->xq.zero_point == 0;  // float aux: d_x * sum(q_x)
  const int64_t ng = t->k / G;
  int v[32] = {};  // a decoder fills the group's first G
  for (int64_t r = 0; r < t->rows; ++r) {
    const uint8_t* row = t->w + r * t->row_bytes;
    for (int64_t n = 0; n < t->n_tokens; ++n) {
      const int8_t* xq = t->xq.q + n * t->xq.q_stride;
      const float* xd = t->xq.d + n * t->xq.nb;
      const float* xs = static_cast<const float*>(t->xq.aux) + n * t->xq.nb;
      float acc = 0;
      for (int64_t g = 0; g < ng; ++g) {
        float dw, c;
        kDecode(row, g, v, &dw, &c);
        int isum = 0;
        for (int l = 0; l < G; ++l) isum += v[l] * xq[g * G + l];
        acc += dw * (xd[g] * static_cast<float>(isum));
        if (has_min) acc += c * xs[g];
      }
      t->y[n * t->ldy + r] = acc;
    }
  }
}

// ---- Float weights ------------------------------------------------------------------
template <typename Load>
void MatMulFloat(const MatMulTask* t, Load load) {
  for (int64_t r = 0; r < t->rows; ++r) {
    const uint8_t* row = t->w + r * t->row_bytes;
    for (int64_t n = 0; n < t->n_tokens; ++n) {
      const float* x = t->x + n * t->ldx;
      float acc = 0;
      for (int64_t i = 0; i < t->k; ++i) acc += load(row, i) * x[i];
      t->y[n * t->ldy + r] = acc;
    }
  }
}

void MatMulF32(const MatMulTask* t) {
  MatMulFloat(t,
              [](const uint8_t* row, int64_t i) { return reinterpret_cast<const float*>(row)[i]; });
}
void MatMulF16(const MatMulTask* t) {
  MatMulFloat(t, [](const uint8_t* row, int64_t i) {
    return HalfToFloat(reinterpret_cast<const uint16_t*>(row)[i]);
  });
}
void MatMulBF16(const MatMulTask* t) {
  MatMulFloat(t, [](const uint8_t* row, int64_t i) {
    return BF16ToFloat(reinterpret_cast<const uint16_t*>(row)[i]);
  });
}
void MatMulFP8(const MatMulTask* t) {
  MatMulFloat(t, [](const uint8_t* row, int64_t i) {
    BlockFP8 b;
    std::memcpy(&b, row + (i / 32) * sizeof(BlockFP8), sizeof(b));
    return HalfToFloat(b.d) * E4M3ToFloat(b.q[i % 32]);
  });
}

// ---- Activations and conversions ------------------------------------------------------
void QuantizeActs(const float* x, int64_t n, int group, int zero_point, int8_t* q, float* d,
                  void* aux) {
  for (int64_t g = 0; g < n / group; ++g) {
    const float* xg = x + g * group;
    float amax = 0;
    for (int i = 0; i < group; ++i) amax = std::fmax(amax, std::fabs(xg[i]));
    float id = amax > 0 ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int i = 0; i < group; ++i) {
      int v = static_cast<int>(std::nearbyint(xg[i] * id));
      q[g * group + i] = static_cast<int8_t>(v);
      sum += v;
    }
    // 32-element groups are ggml's Q8_0/Q8_1 blocks: scale and sum term in
    // fp16, as ggml stores them (see vec_ops.inc).
    const float d32 = amax / 127.0f;
    d[g] = group == 32 ? HalfToFloat(FloatToHalf(d32)) : d32;
    if (zero_point == 0) {
      const float s32 = d32 * static_cast<float>(sum);
      static_cast<float*>(aux)[g] = group == 32 ? HalfToFloat(FloatToHalf(s32)) : s32;
    } else {
      static_cast<int32_t*>(aux)[g] = -zero_point * sum;
    }
  }
}

void RefF32ToF16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = FloatToHalf(src[i]);
}

// A format's kernels on GGUF rows only (no packed layout).
constexpr FormatKernels Plain(MatMulFn matmul) { return {matmul, nullptr, nullptr, nullptr}; }

// Slots in WeightKind order.
const KernelTable kScalarTable = {
    "scalar",
    1,
    {Plain(MatMulF32), Plain(MatMulF16), Plain(MatMulBF16), Plain(MatMulQ<DecodeQ8_0>),
     Plain(MatMulQ<DecodeQ4_0>), Plain(MatMulQ<DecodeQ4_1>), Plain(MatMulQ<DecodeQ4_K>),
     Plain(MatMulQ<DecodeQ6_K>), Plain(MatMulQ<DecodeQ5_0>), Plain(MatMulQ<DecodeQ5_1>),
     Plain(MatMulQ<DecodeQ5_K>), Plain(MatMulQ<DecodeQ3_K>), Plain(MatMulQ<DecodeQ2_K>),
     Plain(MatMulQ<DecodeIQ4_NL>), Plain(MatMulQ<DecodeIQ4_XS>), Plain(MatMulFP8)},
    QuantizeActs,
    RefF32ToF16,
};

}  // namespace

const KernelTable* GetScalarTable() { return &kScalarTable; }

}  // namespace brisk
