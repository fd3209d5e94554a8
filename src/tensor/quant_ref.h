// Internal: the reference (scalar) row conversions of each format, as the
// format traits table (format_traits.cc) names them. Callers use
// QuantizeRow / DequantizeRow or FormatOf(t).quantize / .dequantize.
// n is a multiple of the format's block size.
#pragma once

#include <cstdint>

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

}  // namespace brisk::quant_ref
