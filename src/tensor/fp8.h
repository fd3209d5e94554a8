// Scalar conversions between float and FP8 E4M3 (the OCP "E4M3FN" format:
// 1 sign, 4 exponent bits with bias 7, 3 mantissa bits; no infinities, NaN
// is S.1111.111; largest finite 448; subnormals down to 2^-9), as raw bits.
// The reference for fp8 weights and KV: SIMD kernels are tested
// against these, and these against ml_dtypes' float8_e4m3fn bitwise
// (src/tensor/fp8_test.cc, tests/make_fp8_fixture.py).
#pragma once

#include <cstdint>

namespace brisk {

inline constexpr float kE4M3Max = 448.0f;

float E4M3ToFloat(uint8_t code);
// Round to nearest even. Magnitudes past 448 saturate to +-448 (as vLLM and
// PyTorch clamp before casting: a scale that is slightly off must not turn a
// weight into NaN); NaN stays NaN (0x7F, with its sign); -0 stays -0.
uint8_t FloatToE4M3(float f);

}  // namespace brisk
