// int8 per channel and int4 per group of 128 in Q8_0 / Q4_0 blocks, and fp8
// (E4M3) per channel in BlockFP8 (see quant_ref.h).
#include <algorithm>
#include <cmath>

#include "tensor/float16.h"
#include "tensor/fp8.h"
#include "tensor/quant_blocks.h"
#include "tensor/quant_ref.h"

namespace brisk::quant_ref {

void QuantizeInt8PerChannel(const float* src, void* dst, int64_t n) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(src[i]));
  const uint16_t dh = FloatToHalf(amax / 127.f);
  const float d = HalfToFloat(dh);
  const float id = d != 0 ? 1.f / d : 0.f;
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    b[i].d = dh;
    for (int j = 0; j < 32; ++j) {
      const float q = std::nearbyint(src[32 * i + j] * id);
      b[i].qs[j] = static_cast<int8_t>(std::clamp(q, -127.f, 127.f));
    }
  }
}

void QuantizeInt4Group128(const float* src, void* dst, int64_t n) {
  constexpr int64_t kGroup = 128;
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t g = 0; g < n; g += kGroup) {
    const int64_t len = std::min(kGroup, n - g);
    float amax = 0, max = 0;  // max keeps the sign of the largest magnitude
    for (int64_t i = g; i < g + len; ++i) {
      if (std::fabs(src[i]) > amax) {
        amax = std::fabs(src[i]);
        max = src[i];
      }
    }
    const uint16_t dh = FloatToHalf(max / -8.f);
    const float d = HalfToFloat(dh);
    const float id = d != 0 ? 1.f / d : 0.f;
    for (int64_t blk = g / 32; blk < (g + len) / 32; ++blk) {
      const float* x = src + 32 * blk;
      b[blk].d = dh;
      for (int j = 0; j < 16; ++j) {
        const int lo = static_cast<int>(std::clamp(std::nearbyint(x[j] * id) + 8, 0.f, 15.f));
        const int hi = static_cast<int>(std::clamp(std::nearbyint(x[j + 16] * id) + 8, 0.f, 15.f));
        b[blk].qs[j] = static_cast<uint8_t>(lo | hi << 4);
      }
    }
  }
}

void QuantizeFP8PerChannel(const float* src, void* dst, int64_t n) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(src[i]));
  const uint16_t dh = FloatToHalf(amax / kE4M3Max);
  const float d = HalfToFloat(dh);
  const float id = d != 0 ? 1.f / d : 0.f;
  auto* b = static_cast<BlockFP8*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    b[i].d = dh;
    for (int j = 0; j < 32; ++j) b[i].q[j] = FloatToE4M3(src[32 * i + j] * id);
  }
}

void DequantizeFP8(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockFP8*>(src);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float d = HalfToFloat(b[i].d);
    for (int j = 0; j < 32; ++j) dst[32 * i + j] = d * E4M3ToFloat(b[i].q[j]);
  }
}

}  // namespace brisk::quant_ref
