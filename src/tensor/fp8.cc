#include "tensor/fp8.h"

#include <bit>
#include <cmath>

namespace brisk {

float E4M3ToFloat(uint8_t code) {
  const bool negative = code & 0x80;
  const int exponent = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  float magnitude;
  if (exponent == 0xF && mantissa == 0x7) {
    magnitude = std::nanf("");
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m/8 * 2^-6
  } else {
    magnitude = std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  }
  return negative ? -magnitude : magnitude;
}

uint8_t FloatToE4M3(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  if (std::isnan(f)) return sign | 0x7F;
  const float a = std::fabs(f);
  if (a >= kE4M3Max) return sign | 0x7E;  // saturate (448 itself is 0x7E)
  if (a == 0) return sign;
  // The code's value is q * 2^(e - 10) (normal, q in 8..15) or q * 2^-9
  // (subnormal, q in 0..7): find the step for a's binade, round a / step to
  // the nearest even integer, and let a carry into the next binade.
  int e2 = 0;
  std::frexp(a, &e2);        // a = m * 2^e2, m in [0.5, 1)
  const int e = e2 - 1 + 7;  // biased exponent if normal
  const int step_exp = e >= 1 ? e2 - 4 : -9;
  const float scaled = std::ldexp(a, -step_exp);      // exact: a power-of-two scale
  int qi = static_cast<int>(std::nearbyint(scaled));  // half to even (default mode)
  if (e < 1) {
    // Subnormal range: q in 0..8; 8 is the smallest normal (exponent 1).
    if (qi >= 8) return sign | static_cast<uint8_t>(1 << 3);
    return sign | static_cast<uint8_t>(qi);
  }
  int biased = e;
  if (qi >= 16) {  // rounded up into the next binade
    qi /= 2;
    ++biased;
  }
  if (biased > 15 || (biased == 15 && qi - 8 == 7)) return sign | 0x7E;  // past 448
  return sign | static_cast<uint8_t>((biased << 3) | (qi - 8));
}

}  // namespace brisk
