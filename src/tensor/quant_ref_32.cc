// Reference quantizers and dequantizers of the blocks of 32 beyond 4 and 8
// bits: Q5_0, Q5_1 (5-bit quants: a nibble plus one bit of qh) and IQ4_NL (a
// nibble indexing a fixed 16-level grid). Dequantization is the arithmetic
// the gguf package's numpy dequantizer does, operation for operation (f32
// products, no fused multiply-add), so results are bitwise equal to it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/float16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quant_ref.h"

namespace brisk::quant_ref {
namespace {

// The element of largest magnitude, with its sign.
float SignedAbsMax(const float* x, int n) {
  float amax = 0, max = 0;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// Stores 32 5-bit quants as low nibbles (qs) and a bit plane (qh).
void Pack5(const int* q, uint8_t* qh, uint8_t* qs) {
  uint32_t h = 0;
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0xF) | (q[j + 16] & 0xF) << 4);
  for (int j = 0; j < 32; ++j) h |= static_cast<uint32_t>(q[j] >> 4) << j;
  std::memcpy(qh, &h, 4);
}

// Element j's 5-bit quant (j < 32).
int Unpack5(const uint8_t* qh, const uint8_t* qs, int j) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  const int lo = j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
  return lo | static_cast<int>((h >> j) & 1) << 4;
}

}  // namespace

// Index of the IQ4_NL level nearest to t (levels ascending).
int NearestIQ4(float t) {
  int best = 0;
  for (int i = 1; i < 16; ++i)
    if (std::fabs(t - kIQ4NLValues[i]) < std::fabs(t - kIQ4NLValues[best])) best = i;
  return best;
}

// Q5_0: d = (signed absmax) / -16, q = round(x/d) + 16 in [0, 31].
void QuantizeQ5_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float* x = src + 32 * i;
    const float d = SignedAbsMax(x, 32) / -16.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = FloatToHalf(d);
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = std::clamp(static_cast<int>(x[j] * id + 16.5f), 0, 31);
    Pack5(q, b[i].qh, b[i].qs);
  }
}
void DequantizeQ5_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float d = HalfToFloat(b[i].d);
    for (int j = 0; j < 32; ++j)
      dst[32 * i + j] = d * static_cast<float>(Unpack5(b[i].qh, b[i].qs, j) - 16);
  }
}

// Q5_1: [min, max] in 31 steps.
void QuantizeQ5_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float* x = src + 32 * i;
    float lo = x[0], hi = x[0];
    for (int j = 1; j < 32; ++j) {
      lo = std::fmin(lo, x[j]);
      hi = std::fmax(hi, x[j]);
    }
    const float d = (hi - lo) / 31.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = FloatToHalf(d);
    b[i].m = FloatToHalf(lo);
    int q[32];
    for (int j = 0; j < 32; ++j)
      q[j] = std::clamp(static_cast<int>((x[j] - lo) * id + 0.5f), 0, 31);
    Pack5(q, b[i].qh, b[i].qs);
  }
}
void DequantizeQ5_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float d = HalfToFloat(b[i].d), m = HalfToFloat(b[i].m);
    for (int j = 0; j < 32; ++j)
      dst[32 * i + j] = d * static_cast<float>(Unpack5(b[i].qh, b[i].qs, j)) + m;
  }
}

// IQ4_NL: d = (signed absmax) / -127 so the largest magnitude lands on the
// grid's -127; every element takes the nearest level of x/d.
void QuantizeIQ4_NL(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float* x = src + 32 * i;
    b[i].d = FloatToHalf(SignedAbsMax(x, 32) / -127.0f);
    const float d = HalfToFloat(b[i].d);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < 16; ++j)
      b[i].qs[j] = static_cast<uint8_t>(NearestIQ4(x[j] * id) | NearestIQ4(x[j + 16] * id) << 4);
  }
}
void DequantizeIQ4_NL(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float d = HalfToFloat(b[i].d);
    for (int j = 0; j < 16; ++j) {
      dst[32 * i + j] = d * static_cast<float>(kIQ4NLValues[b[i].qs[j] & 0xF]);
      dst[32 * i + j + 16] = d * static_cast<float>(kIQ4NLValues[b[i].qs[j] >> 4]);
    }
  }
}

}  // namespace brisk::quant_ref
