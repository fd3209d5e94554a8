#include "tensor/format_traits.h"

#include <cassert>
#include <iterator>

#include "tensor/kernel_table.h"
#include "tensor/quant_ref.h"

namespace brisk {
namespace {

namespace r = quant_ref;
constexpr DType kNone = DType::kF32;  // vec_dot_type of formats that are not weights

// The table. Geometry as the GGUF format defines it; block bytes are the
// block structs' sizes (quant_blocks.h).
constexpr FormatTraits kFormats[] = {
    // type, name, block elements, block bytes, quantize, dequantize,
    // kernel slot, vec_dot_type, activation group, activation zero point
    {DType::kF32, "F32", 1, 4, r::QuantizeF32, r::DequantizeF32, kKindF32, DType::kF32, 0, 0},
    {DType::kF16, "F16", 1, 2, r::QuantizeF16, r::DequantizeF16, kKindF16, DType::kF32, 0, 0},
    {DType::kQ4_0, "Q4_0", 32, sizeof(BlockQ4_0), r::QuantizeQ4_0, r::DequantizeQ4_0, kKindQ4_0,
     DType::kQ8_0, 32, 8},
    {DType::kQ4_1, "Q4_1", 32, sizeof(BlockQ4_1), r::QuantizeQ4_1, r::DequantizeQ4_1, kKindQ4_1,
     DType::kQ8_1, 32, 0},
    {DType::kQ5_0, "Q5_0", 32, sizeof(BlockQ5_0), r::QuantizeQ5_0, r::DequantizeQ5_0, kKindQ5_0,
     DType::kQ8_0, 32, 16},
    {DType::kQ5_1, "Q5_1", 32, sizeof(BlockQ5_1), r::QuantizeQ5_1, r::DequantizeQ5_1, kKindQ5_1,
     DType::kQ8_1, 32, 0},
    // Zero point 128: kernels may store Q8_0 weights as q+128 (unsigned); the
    // others ignore the aux term.
    {DType::kQ8_0, "Q8_0", 32, sizeof(BlockQ8_0), r::QuantizeQ8_0, r::DequantizeQ8_0, kKindQ8_0,
     DType::kQ8_0, 32, 128},
    {DType::kQ8_1, "Q8_1", 32, sizeof(BlockQ8_1), r::QuantizeQ8_1, r::DequantizeQ8_1, -1, kNone, 0,
     0},
    // Q2_K's and Q3_K's sub-blocks of 16 each get their own activation scale.
    {DType::kQ2_K, "Q2_K", 256, sizeof(BlockQ2_K), r::QuantizeQ2_K, r::DequantizeQ2_K, kKindQ2_K,
     DType::kQ8_K, 16, 0},
    {DType::kQ3_K, "Q3_K", 256, sizeof(BlockQ3_K), r::QuantizeQ3_K, r::DequantizeQ3_K, kKindQ3_K,
     DType::kQ8_K, 16, 4},
    {DType::kQ4_K, "Q4_K", 256, sizeof(BlockQ4_K), r::QuantizeQ4_K, r::DequantizeQ4_K, kKindQ4_K,
     DType::kQ8_K, 32, 0},
    {DType::kQ5_K, "Q5_K", 256, sizeof(BlockQ5_K), r::QuantizeQ5_K, r::DequantizeQ5_K, kKindQ5_K,
     DType::kQ8_K, 32, 0},
    // Q6_K's sub-blocks of 16 each get their own activation scale.
    {DType::kQ6_K, "Q6_K", 256, sizeof(BlockQ6_K), r::QuantizeQ6_K, r::DequantizeQ6_K, kKindQ6_K,
     DType::kQ8_K, 16, 32},
    {DType::kQ8_K, "Q8_K", 256, sizeof(BlockQ8_K), r::QuantizeQ8_K, r::DequantizeQ8_K, -1, kNone, 0,
     0},
    // Grid levels are int8 (-127..113): zero point 128 as for Q8_0.
    {DType::kIQ4_NL, "IQ4_NL", 32, sizeof(BlockIQ4_NL), r::QuantizeIQ4_NL, r::DequantizeIQ4_NL,
     kKindIQ4_NL, DType::kQ8_0, 32, 128},
    {DType::kIQ4_XS, "IQ4_XS", 256, sizeof(BlockIQ4_XS), r::QuantizeIQ4_XS, r::DequantizeIQ4_XS,
     kKindIQ4_XS, DType::kQ8_K, 32, 128},
    {DType::kBF16, "BF16", 1, 2, r::QuantizeBF16, r::DequantizeBF16, kKindBF16, DType::kF32, 0, 0},
    // Brisk's fp8 weights: decoded to f32 in the kernels, f32 activations.
    {DType::kFP8_E4M3, "FP8_E4M3", 32, sizeof(BlockFP8), r::QuantizeFP8PerChannel, r::DequantizeFP8,
     kKindFP8, DType::kF32, 0, 0},
};

// GGUF ids are small: a direct index (-1: unknown id).
constexpr int kMaxId = 64;
struct IdIndex {
  int8_t at[kMaxId];
  constexpr IdIndex() : at() {
    for (int i = 0; i < kMaxId; ++i) at[i] = -1;
    for (int i = 0; i < static_cast<int>(std::size(kFormats)); ++i)
      at[static_cast<uint32_t>(kFormats[i].type)] = static_cast<int8_t>(i);
  }
};
constexpr IdIndex kIndex;

}  // namespace

std::span<const FormatTraits> AllFormats() { return kFormats; }

const FormatTraits* FindFormat(uint32_t ggml_type) {
  if (ggml_type >= kMaxId || kIndex.at[ggml_type] < 0) return nullptr;
  return &kFormats[kIndex.at[ggml_type]];
}

const FormatTraits& FormatOf(DType t) {
  const FormatTraits* f = FindFormat(static_cast<uint32_t>(t));
  assert(f != nullptr && "FormatOf: a DType outside the table");
  return *f;
}

const char* DTypeName(DType t) {
  const FormatTraits* f = FindFormat(static_cast<uint32_t>(t));
  return f ? f->name : "unknown";
}

int64_t RowBytes(DType t, int64_t n) {
  const FormatTraits* f = FindFormat(static_cast<uint32_t>(t));
  if (!f || n < 0 || n % f->block_size != 0) return -1;
  return n / f->block_size * f->block_bytes;
}

bool IsMatMulWeightType(DType t) {
  const FormatTraits* f = FindFormat(static_cast<uint32_t>(t));
  return f != nullptr && f->kernel_slot >= 0;
}

std::string MatMulWeightTypeNames() {
  // Slot order (F32, F16, BF16, ...), the order the kernel tables list them.
  std::string out;
  for (int slot = 0; slot < kNumWeightKinds; ++slot)
    for (const FormatTraits& f : kFormats)
      if (f.kernel_slot == slot) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

void QuantizeRow(DType t, const float* src, void* dst, int64_t n) {
  const FormatTraits* f = FindFormat(static_cast<uint32_t>(t));
  assert(f && f->quantize && "QuantizeRow: no reference quantizer for this type");
  if (f && f->quantize) f->quantize(src, dst, n);
}

void DequantizeRow(DType t, const void* src, float* dst, int64_t n) {
  const FormatTraits* f = FindFormat(static_cast<uint32_t>(t));
  assert(f && f->dequantize && "DequantizeRow: unsupported type");
  if (f && f->dequantize) f->dequantize(src, dst, n);
}

}  // namespace brisk
