// Reference (plain C++) conversions, quantizers and dequantizers for the GGUF
// block formats. These define the formats' meaning; SIMD kernels are tested
// against them.
#include <cassert>
#include <cmath>
#include <cstring>

#include "tensor/kernel_table.h"
#include "tensor/kernels.h"

namespace brisk {

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to inf
  int32_t exp = static_cast<int32_t>(absx >> 23) - 127 + 15;
  uint32_t man = absx & 0x7fffff;
  if (exp <= 0) {  // subnormal half (or zero)
    if (exp < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000;
    int shift = 14 - exp;  // 24-bit mantissa down to 10 - (1 - exp) bits
    uint32_t half_man = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_man & 1))) ++half_man;
    return static_cast<uint16_t>(sign | half_man);
  }
  uint32_t h = static_cast<uint32_t>(exp) << 10 | man >> 13;
  uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // carry may bump the exponent: fine
  return static_cast<uint16_t>(sign | h);
}

float BF16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // nan
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

bool IsMatMulWeightType(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ4_K:
    case DType::kQ6_K: return true;
    default: return false;
  }
}

DType VecDotType(DType weight) {
  switch (weight) {
    case DType::kQ4_0:
    case DType::kQ8_0: return DType::kQ8_0;
    case DType::kQ4_1: return DType::kQ8_1;
    case DType::kQ4_K:
    case DType::kQ6_K: return DType::kQ8_K;
    default: return DType::kF32;
  }
}

namespace {

void GetScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Symmetric 8-bit: d = amax/127, q = round(x/d). Returns sum(q).
int QuantizeSym8(const float* x, int n, float* d_out, int8_t* q) {
  float amax = 0;
  for (int i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  float d = amax / 127.0f;
  float id = amax > 0 ? 127.0f / amax : 0.0f;
  int sum = 0;
  for (int i = 0; i < n; ++i) {
    q[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
    sum += q[i];
  }
  *d_out = d;
  return sum;
}

}  // namespace

void QuantizeRow(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::kF16: {
      auto* o = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) o[i] = FloatToHalf(src[i]);
      return;
    }
    case DType::kBF16: {
      auto* o = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) o[i] = FloatToBF16(src[i]);
      return;
    }
    case DType::kQ8_0: {
      auto* b = static_cast<BlockQ8_0*>(dst);
      for (int64_t i = 0; i < n / 32; ++i) {
        float d;
        QuantizeSym8(src + 32 * i, 32, &d, b[i].qs);
        b[i].d = FloatToHalf(d);
      }
      return;
    }
    case DType::kQ8_1: {
      auto* b = static_cast<BlockQ8_1*>(dst);
      for (int64_t i = 0; i < n / 32; ++i) {
        float d;
        int sum = QuantizeSym8(src + 32 * i, 32, &d, b[i].qs);
        b[i].d = FloatToHalf(d);
        b[i].s = FloatToHalf(d * static_cast<float>(sum));
      }
      return;
    }
    case DType::kQ8_K: {
      auto* b = static_cast<BlockQ8_K*>(dst);
      for (int64_t i = 0; i < n / 256; ++i) {
        QuantizeSym8(src + 256 * i, 256, &b[i].d, b[i].qs);
        for (int j = 0; j < 16; ++j) {
          int s = 0;
          for (int l = 0; l < 16; ++l) s += b[i].qs[16 * j + l];
          b[i].bsums[j] = static_cast<int16_t>(s);
        }
      }
      return;
    }
    case DType::kQ4_0: {
      auto* b = static_cast<BlockQ4_0*>(dst);
      for (int64_t i = 0; i < n / 32; ++i) {
        const float* x = src + 32 * i;
        float amax = 0, max = 0;  // max keeps the sign of the largest magnitude
        for (int j = 0; j < 32; ++j) {
          if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
          }
        }
        float d = max / -8.0f;
        float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = FloatToHalf(d);
        for (int j = 0; j < 16; ++j) {
          int lo = static_cast<int>(x[j] * id + 8.5f), hi = static_cast<int>(x[j + 16] * id + 8.5f);
          lo = lo < 0 ? 0 : lo > 15 ? 15 : lo;
          hi = hi < 0 ? 0 : hi > 15 ? 15 : hi;
          b[i].qs[j] = static_cast<uint8_t>(lo | hi << 4);
        }
      }
      return;
    }
    case DType::kQ4_1: {
      auto* b = static_cast<BlockQ4_1*>(dst);
      for (int64_t i = 0; i < n / 32; ++i) {
        const float* x = src + 32 * i;
        float lo_v = x[0], hi_v = x[0];
        for (int j = 1; j < 32; ++j) {
          lo_v = std::fmin(lo_v, x[j]);
          hi_v = std::fmax(hi_v, x[j]);
        }
        float d = (hi_v - lo_v) / 15.0f;
        float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = FloatToHalf(d);
        b[i].m = FloatToHalf(lo_v);
        for (int j = 0; j < 16; ++j) {
          int lo = static_cast<int>((x[j] - lo_v) * id + 0.5f);
          int hi = static_cast<int>((x[j + 16] - lo_v) * id + 0.5f);
          lo = lo < 0 ? 0 : lo > 15 ? 15 : lo;
          hi = hi < 0 ? 0 : hi > 15 ? 15 : hi;
          b[i].qs[j] = static_cast<uint8_t>(lo | hi << 4);
        }
      }
      return;
    }
    default: assert(false && "QuantizeRow: unsupported type"); return;
  }
}

void DequantizeRow(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = HalfToFloat(h[i]);
      return;
    }
    case DType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = BF16ToFloat(h[i]);
      return;
    }
    case DType::kQ8_0: {
      const auto* b = static_cast<const BlockQ8_0*>(src);
      for (int64_t i = 0; i < n / 32; ++i) {
        float d = HalfToFloat(b[i].d);
        for (int j = 0; j < 32; ++j) dst[32 * i + j] = d * b[i].qs[j];
      }
      return;
    }
    case DType::kQ8_1: {
      const auto* b = static_cast<const BlockQ8_1*>(src);
      for (int64_t i = 0; i < n / 32; ++i) {
        float d = HalfToFloat(b[i].d);
        for (int j = 0; j < 32; ++j) dst[32 * i + j] = d * b[i].qs[j];
      }
      return;
    }
    case DType::kQ8_K: {
      const auto* b = static_cast<const BlockQ8_K*>(src);
      for (int64_t i = 0; i < n / 256; ++i)
        for (int j = 0; j < 256; ++j) dst[256 * i + j] = b[i].d * b[i].qs[j];
      return;
    }
    case DType::kQ4_0: {
      const auto* b = static_cast<const BlockQ4_0*>(src);
      for (int64_t i = 0; i < n / 32; ++i) {
        float d = HalfToFloat(b[i].d);
        for (int j = 0; j < 16; ++j) {
          dst[32 * i + j] = d * ((b[i].qs[j] & 0xF) - 8);
          dst[32 * i + j + 16] = d * ((b[i].qs[j] >> 4) - 8);
        }
      }
      return;
    }
    case DType::kQ4_1: {
      const auto* b = static_cast<const BlockQ4_1*>(src);
      for (int64_t i = 0; i < n / 32; ++i) {
        float d = HalfToFloat(b[i].d), m = HalfToFloat(b[i].m);
        for (int j = 0; j < 16; ++j) {
          dst[32 * i + j] = d * (b[i].qs[j] & 0xF) + m;
          dst[32 * i + j + 16] = d * (b[i].qs[j] >> 4) + m;
        }
      }
      return;
    }
    case DType::kQ4_K: {
      const auto* b = static_cast<const BlockQ4_K*>(src);
      for (int64_t i = 0; i < n / 256; ++i) {
        float d = HalfToFloat(b[i].d), dmin = HalfToFloat(b[i].dmin);
        float* y = dst + 256 * i;
        for (int c = 0; c < 4; ++c) {
          int sc0, m0, sc1, m1;
          GetScaleMinK4(2 * c, b[i].scales, &sc0, &m0);
          GetScaleMinK4(2 * c + 1, b[i].scales, &sc1, &m1);
          const uint8_t* q = b[i].qs + 32 * c;
          for (int l = 0; l < 32; ++l) {
            y[64 * c + l] = d * sc0 * (q[l] & 0xF) - dmin * m0;
            y[64 * c + 32 + l] = d * sc1 * (q[l] >> 4) - dmin * m1;
          }
        }
      }
      return;
    }
    case DType::kQ6_K: {
      const auto* b = static_cast<const BlockQ6_K*>(src);
      for (int64_t i = 0; i < n / 256; ++i) {
        float d = HalfToFloat(b[i].d);
        for (int h = 0; h < 2; ++h) {
          const uint8_t* ql = b[i].ql + 64 * h;
          const uint8_t* qh = b[i].qh + 32 * h;
          const int8_t* sc = b[i].scales + 8 * h;
          float* y = dst + 256 * i + 128 * h;
          for (int l = 0; l < 32; ++l) {
            int is = l / 16;
            int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
            int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
            int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            y[l] = d * sc[is] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
          }
        }
      }
      return;
    }
    default: assert(false && "DequantizeRow: unsupported type"); return;
  }
}

}  // namespace brisk
