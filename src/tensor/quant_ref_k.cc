// Reference quantizers and dequantizers of the super-blocks of 256 beyond
// Q4_K and Q6_K: Q2_K, Q3_K (sub-blocks of 16), Q5_K and IQ4_XS (sub-blocks
// of 32). Dequantization is the arithmetic the gguf package's numpy
// dequantizer does, operation for operation: the sub-block's scale d*sc and
// min dmin*m are f32 products first, then scale*q (- min), no fused
// multiply-add; results are bitwise equal to it. The quantizers are simple
// (min/max per sub-block, nearest level), enough for tests and benchmarks.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/float16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quant_ref.h"

namespace brisk::quant_ref {
namespace {

int RoundClamp(float v, int lo, int hi) {
  return std::clamp(static_cast<int>(std::nearbyint(v)), lo, hi);
}

// Q3_K's 6-bit scale u (0..63) of sub-block j, and its inverse.
int GetScaleQ3K(const uint8_t* s, int j) {
  const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return lo | hi << 4;
}
void SetScaleQ3K(uint8_t* s, int j, int u) {
  if (j < 8) {
    s[j] = static_cast<uint8_t>((s[j] & 0xF0) | (u & 0xF));
  } else {
    s[j - 8] = static_cast<uint8_t>((s[j - 8] & 0x0F) | (u & 0xF) << 4);
  }
  s[8 + j % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (j / 4)));
}

// IQ4_XS's 6-bit scale u (0..63) of sub-block j.
int GetScaleIQ4XS(const BlockIQ4_XS& b, int j) {
  const int lo = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF;
  return lo | ((b.scales_h >> (2 * j)) & 3) << 4;
}

}  // namespace

// ---- Q2_K -----------------------------------------------------------------------
// Each sub-block of 16 spans [lo, hi] with lo = min(0, min x): scale
// (hi-lo)/3, min -lo; both 4-bit multiples of d = max scale/15 and
// dmin = max min/15, the scale rounded up so 3 steps still span the range.
void QuantizeQ2_K(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ2_K*>(dst);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float* x = src + 256 * i;
    float scale[16], minv[16], max_scale, max_min;
    SubBlockScalesMins(x, 16, 16, 3.0f, scale, minv, &max_scale, &max_min);
    b[i].d = FloatToHalf(max_scale / 15.0f);
    b[i].dmin = FloatToHalf(max_min / 15.0f);
    const float d = HalfToFloat(b[i].d), dmin = HalfToFloat(b[i].dmin);
    std::memset(b[i].qs, 0, sizeof(b[i].qs));
    for (int j = 0; j < 16; ++j) {
      const int sc = d > 0 ? std::clamp(static_cast<int>(std::ceil(scale[j] / d)), 0, 15) : 0;
      const int m = dmin > 0 ? RoundClamp(minv[j] / dmin, 0, 15) : 0;
      b[i].scales[j] = static_cast<uint8_t>(sc | m << 4);
      const float step = d * static_cast<float>(sc), off = dmin * static_cast<float>(m);
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * j + l, h = e / 128, s = (e % 128) / 32;
        const int q = step > 0 ? RoundClamp((x[e] + off) / step, 0, 3) : 0;
        b[i].qs[32 * h + e % 32] |= static_cast<uint8_t>(q << (2 * s));
      }
    }
  }
}
void DequantizeQ2_K(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float d = HalfToFloat(b[i].d), dmin = HalfToFloat(b[i].dmin);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 16, h = e / 128, s = (e % 128) / 32;
      const float dl = d * static_cast<float>(b[i].scales[j] & 0xF);
      const float ml = dmin * static_cast<float>(b[i].scales[j] >> 4);
      const int q = (b[i].qs[32 * h + e % 32] >> (2 * s)) & 3;
      dst[256 * i + e] = dl * static_cast<float>(q) - ml;
    }
  }
}

// ---- Q3_K -----------------------------------------------------------------------
// Each sub-block of 16 gets a signed scale s with q - 4 in [-4, 3]: the side
// of larger magnitude takes -4 steps. Scales are 6-bit signed multiples
// (-32..31) of d = max |s| / 31, rounded away from zero so the steps still
// span the sub-block.
void QuantizeQ3_K(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float* x = src + 256 * i;
    float scale[16], max_scale = 0;
    for (int j = 0; j < 16; ++j) {
      float lo = 0, hi = 0;
      for (int l = 0; l < 16; ++l) {
        lo = std::fmin(lo, x[16 * j + l]);
        hi = std::fmax(hi, x[16 * j + l]);
      }
      scale[j] = -lo >= hi ? std::fmax(-lo / 4.0f, hi / 3.0f) : -std::fmax(hi / 4.0f, -lo / 3.0f);
      max_scale = std::fmax(max_scale, std::fabs(scale[j]));
    }
    b[i].d = FloatToHalf(max_scale / 31.0f);
    const float d = HalfToFloat(b[i].d);
    std::memset(b[i].scales, 0, sizeof(b[i].scales));
    std::memset(b[i].qs, 0, sizeof(b[i].qs));
    std::memset(b[i].hmask, 0, sizeof(b[i].hmask));
    for (int j = 0; j < 16; ++j) {
      const int mag = d > 0 ? static_cast<int>(std::ceil(std::fabs(scale[j]) / d)) : 0;
      const int ls = std::clamp(scale[j] < 0 ? -mag : mag, -32, 31);
      SetScaleQ3K(b[i].scales, j, ls + 32);
      const float step = d * static_cast<float>(ls);
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * j + l, h = e / 128, s = (e % 128) / 32;
        const int q = (step != 0 ? RoundClamp(x[e] / step, -4, 3) : 0) + 4;
        b[i].qs[32 * h + e % 32] |= static_cast<uint8_t>((q & 3) << (2 * s));
        b[i].hmask[e % 32] |= static_cast<uint8_t>((q >> 2) << (4 * h + s));
      }
    }
  }
}
void DequantizeQ3_K(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float d = HalfToFloat(b[i].d);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 16, h = e / 128, s = (e % 128) / 32;
      const float dl = d * static_cast<float>(GetScaleQ3K(b[i].scales, j) - 32);
      const int ql = (b[i].qs[32 * h + e % 32] >> (2 * s)) & 3;
      const int hb = (b[i].hmask[e % 32] >> (4 * h + s)) & 1;
      dst[256 * i + e] = dl * static_cast<float>(ql - 4 * (1 - hb));
    }
  }
}

// ---- Q5_K -----------------------------------------------------------------------
// As QuantizeQ4_K with 31 steps per sub-block of 32.
void QuantizeQ5_K(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float* x = src + 256 * i;
    float scale[8], minv[8], max_scale, max_min;
    SubBlockScalesMins(x, 8, 32, 31.0f, scale, minv, &max_scale, &max_min);
    int sc[8], m[8];
    const auto [d, dmin] = QuantizeScalesMinsK4(scale, minv, max_scale, max_min, &b[i].d,
                                                &b[i].dmin, b[i].scales, sc, m);
    std::memset(b[i].qs, 0, sizeof(b[i].qs));
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    for (int j = 0; j < 8; ++j) {
      const float step = d * static_cast<float>(sc[j]), off = dmin * static_cast<float>(m[j]);
      for (int l = 0; l < 32; ++l) {
        const int q = step > 0 ? RoundClamp((x[32 * j + l] + off) / step, 0, 31) : 0;
        b[i].qs[32 * (j / 2) + l] |= static_cast<uint8_t>((q & 0xF) << (4 * (j % 2)));
        b[i].qh[l] |= static_cast<uint8_t>((q >> 4) << j);
      }
    }
  }
}
void DequantizeQ5_K(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float d = HalfToFloat(b[i].d), dmin = HalfToFloat(b[i].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      GetScaleMinK4(j, b[i].scales, &sc, &m);
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        const int lo = (b[i].qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF;
        const int q = lo | ((b[i].qh[l] >> j) & 1) << 4;
        dst[256 * i + 32 * j + l] = dl * static_cast<float>(q) - ml;
      }
    }
  }
}

// ---- IQ4_XS ---------------------------------------------------------------------
// Each sub-block of 32 gets the IQ4_NL block scale (signed absmax / -127),
// a 6-bit signed multiple (-32..31) of d = max |scale| / 31; elements take
// the nearest grid level.
void QuantizeIQ4_XS(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float* x = src + 256 * i;
    float scale[8], max_scale = 0;
    for (int j = 0; j < 8; ++j) {
      float amax = 0, max = 0;
      for (int l = 0; l < 32; ++l) {
        if (std::fabs(x[32 * j + l]) > amax) {
          amax = std::fabs(x[32 * j + l]);
          max = x[32 * j + l];
        }
      }
      scale[j] = max / -127.0f;
      max_scale = std::fmax(max_scale, amax / 127.0f);
    }
    b[i].d = FloatToHalf(max_scale / 31.0f);
    const float d = HalfToFloat(b[i].d);
    b[i].scales_h = 0;
    std::memset(b[i].scales_l, 0, sizeof(b[i].scales_l));
    for (int j = 0; j < 8; ++j) {
      const int ls = d > 0 ? RoundClamp(scale[j] / d, -32, 31) : 0;
      const int u = ls + 32;
      b[i].scales_l[j / 2] |= static_cast<uint8_t>((u & 0xF) << (4 * (j % 2)));
      b[i].scales_h |= static_cast<uint16_t>((u >> 4) << (2 * j));
      const float step = d * static_cast<float>(ls);
      const float id = step != 0 ? 1.0f / step : 0.0f;
      uint8_t* qs = b[i].qs + 16 * j;
      for (int l = 0; l < 16; ++l) {
        qs[l] = static_cast<uint8_t>(NearestIQ4(x[32 * j + l] * id) |
                                     NearestIQ4(x[32 * j + 16 + l] * id) << 4);
      }
    }
  }
}
void DequantizeIQ4_XS(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float d = HalfToFloat(b[i].d);
    for (int j = 0; j < 8; ++j) {
      const float dl = d * static_cast<float>(GetScaleIQ4XS(b[i], j) - 32);
      const uint8_t* qs = b[i].qs + 16 * j;
      float* y = dst + 256 * i + 32 * j;
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * static_cast<float>(kIQ4NLValues[qs[l] & 0xF]);
        y[l + 16] = dl * static_cast<float>(kIQ4NLValues[qs[l] >> 4]);
      }
    }
  }
}

}  // namespace brisk::quant_ref
