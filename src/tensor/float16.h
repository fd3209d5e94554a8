// Scalar conversions between float and the two 16-bit float formats GGUF
// stores (IEEE half, bfloat16), as raw bits. Reference code: SIMD kernels
// convert with F16C/AVX-512 instructions and are tested against these.
#pragma once

#include <cstdint>

namespace brisk {

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);  // round to nearest even
float BF16ToFloat(uint16_t h);
uint16_t FloatToBF16(float f);  // round to nearest even

}  // namespace brisk
