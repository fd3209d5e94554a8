// A fast exp for the sampler and logprobs: both exponentiate a whole
// vocabulary-sized row of (logit - max) <= 0 per token, where std::exp is
// several times slower and does not vectorize.
#pragma once

#include <bit>
#include <cstdint>

namespace brisk {

// exp(x) for x <= 0 (Cephes expf: range reduction by ln 2, degree-6
// polynomial, 2^n by building the exponent bits); relative error ~2e-7.
// exp(-inf) = 0 and anything below -87 is 0. The clamp is done on the bits
// with integer masks, not float compares: GCC will not if-convert float
// compares under the default -ftrapping-math, and this way the loop in
// ExpScaled vectorizes on baseline SSE2 (several times faster than std::exp).
inline float ExpNonPositive(float x) {
  constexpr uint32_t kMinBits = 0xC2AE0000u;  // -87.0f; for x <= 0, x < -87 <=> bits > kMinBits
  const uint32_t xb = std::bit_cast<uint32_t>(x);
  const uint32_t under = 0u - static_cast<uint32_t>(xb > kMinBits);  // all ones below -87
  const float xc = std::bit_cast<float>((xb & ~under) | (kMinBits & under));
  // Round to nearest integer with the 1.5 * 2^23 trick (exact for |v| < 2^22).
  const float n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t e = static_cast<int32_t>(n) + 127;  // n in [-126, 0]: a normal float
  const uint32_t yb = std::bit_cast<uint32_t>(p * std::bit_cast<float>(e << 23));
  return std::bit_cast<float>(yb & ~under);
}

}  // namespace brisk
