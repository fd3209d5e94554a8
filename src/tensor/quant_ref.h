// Internal: the reference (scalar) row conversions of each format, as the
// format traits table (format_traits.cc) names them. Callers use
// QuantizeRow / DequantizeRow or FormatOf(t).quantize / .dequantize.
// n is a multiple of the format's block size.
#pragma once

#include <cstdint>
#include <utility>

namespace brisk::quant_ref {

void QuantizeF32(const float* src, void* dst, int64_t n);
void DequantizeF32(const void* src, float* dst, int64_t n);
void QuantizeF16(const float* src, void* dst, int64_t n);
void DequantizeF16(const void* src, float* dst, int64_t n);
void QuantizeBF16(const float* src, void* dst, int64_t n);
void DequantizeBF16(const void* src, float* dst, int64_t n);
void QuantizeQ4_0(const float* src, void* dst, int64_t n);
void DequantizeQ4_0(const void* src, float* dst, int64_t n);
void QuantizeQ4_1(const float* src, void* dst, int64_t n);
void DequantizeQ4_1(const void* src, float* dst, int64_t n);
void QuantizeQ8_0(const float* src, void* dst, int64_t n);
void DequantizeQ8_0(const void* src, float* dst, int64_t n);
void QuantizeQ8_1(const float* src, void* dst, int64_t n);
void DequantizeQ8_1(const void* src, float* dst, int64_t n);
void QuantizeQ4_K(const float* src, void* dst, int64_t n);
void DequantizeQ4_K(const void* src, float* dst, int64_t n);
void QuantizeQ6_K(const float* src, void* dst, int64_t n);
void DequantizeQ6_K(const void* src, float* dst, int64_t n);
void QuantizeQ8_K(const float* src, void* dst, int64_t n);
void DequantizeQ8_K(const void* src, float* dst, int64_t n);

// quant_ref_32.cc: blocks of 32 with 5-bit quants or the IQ4_NL grid.
void QuantizeQ5_0(const float* src, void* dst, int64_t n);
void DequantizeQ5_0(const void* src, float* dst, int64_t n);
void QuantizeQ5_1(const float* src, void* dst, int64_t n);
void DequantizeQ5_1(const void* src, float* dst, int64_t n);
void QuantizeIQ4_NL(const float* src, void* dst, int64_t n);
void DequantizeIQ4_NL(const void* src, float* dst, int64_t n);
// quant_ref_k.cc: the other super-blocks of 256.
void QuantizeQ2_K(const float* src, void* dst, int64_t n);
void DequantizeQ2_K(const void* src, float* dst, int64_t n);
void QuantizeQ3_K(const float* src, void* dst, int64_t n);
void DequantizeQ3_K(const void* src, float* dst, int64_t n);
void QuantizeQ5_K(const float* src, void* dst, int64_t n);
void DequantizeQ5_K(const void* src, float* dst, int64_t n);
void QuantizeIQ4_XS(const float* src, void* dst, int64_t n);
void DequantizeIQ4_XS(const void* src, float* dst, int64_t n);

// Brisk's load-time precisions int8 and int4 (quant_ref_channel.cc): the
// scale granularity vLLM's int8/int4 weights use, written in ggml blocks so
// the Q8_0 / Q4_0 kernels run them (dequantize with DequantizeQ8_0 / _Q4_0).
// - int8: symmetric, one scale per row (output channel), d = max|x| / 127;
//   every Q8_0 block of the row carries that scale.
// - int4: symmetric 4-bit, one scale per group of 128 values (the group size
//   of GPTQ/AWQ checkpoints; a row's last group may be shorter), d =
//   (signed value of max |x|) / -8 as Q4_0 does per block of 32; the group's
//   four Q4_0 blocks carry the same scale.
// Quants are rounded against the f16-rounded scale. n: one row (a multiple
// of 32).
void QuantizeInt8PerChannel(const float* src, void* dst, int64_t n);
void QuantizeInt4Group128(const float* src, void* dst, int64_t n);
// fp8: E4M3 codes with one scale per row (output channel), d = max|x| / 448
// rounded to f16, codes = E4M3(x / d) (round to nearest even, saturating),
// as vLLM's FP8 per-channel weights; written in BlockFP8.
void QuantizeFP8PerChannel(const float* src, void* dst, int64_t n);
void DequantizeFP8(const void* src, float* dst, int64_t n);

// Index of the IQ4_NL grid level nearest to t.
int NearestIQ4(float t);
// Q4_K / Q5_K packing of 8 (6-bit scale, 6-bit min) pairs in 12 bytes:
// sub-block j's pair, and all 8 pairs written back (values 0..63).
void GetScaleMinK4(int j, const uint8_t* q, int* sc, int* m);
void SetScalesMinsK4(const int* sc, const int* m, uint8_t* q);
// Q2_K / Q4_K / Q5_K: each of `n_sub` sub-blocks of `len` values of `x`
// spans [lo, hi] with lo = min(0, min x) (the format's min is subtracted, so
// it must be >= 0): scale[j] = (hi - lo) / steps, minv[j] = -lo. Sets the
// largest of each.
void SubBlockScalesMins(const float* x, int n_sub, int len, float steps, float* scale, float* minv,
                        float* max_scale, float* max_min);
// Q4_K / Q5_K: the 8 scales and mins as 6-bit multiples of d = max scale/63
// and dmin = max min/63 (both rounded to f16 and stored in *d, *dmin): the
// 6-bit values in sc and m, packed into `scales`; returns d and dmin as stored.
std::pair<float, float> QuantizeScalesMinsK4(const float* scale, const float* minv, float max_scale,
                                             float max_min, uint16_t* d, uint16_t* dmin,
                                             uint8_t* scales, int* sc, int* m);

}  // namespace brisk::quant_ref
