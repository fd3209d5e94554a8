#include "tensor/dtype.h"

namespace brisk {
namespace {
// Block layouts as the GGUF format defines them.
constexpr DTypeLayout kLayouts[] = {
    {DType::kF32, "F32", 1, 4, true},
    {DType::kF16, "F16", 1, 2, true},
    {DType::kQ4_0, "Q4_0", 32, 18, true},  // f16 d, 16 bytes of nibbles
    {DType::kQ4_1, "Q4_1", 32, 20, true},  // f16 d, f16 m, 16 bytes of nibbles
    {DType::kQ5_0, "Q5_0", 32, 22, false},
    {DType::kQ5_1, "Q5_1", 32, 24, false},
    {DType::kQ8_0, "Q8_0", 32, 34, true},  // f16 d, 32 int8
    {DType::kQ8_1, "Q8_1", 32, 36, true},  // f16 d, f16 s = d*sum(q), 32 int8
    {DType::kQ2_K, "Q2_K", 256, 84, false},
    {DType::kQ3_K, "Q3_K", 256, 110, false},
    {DType::kQ4_K, "Q4_K", 256, 144, true},  // f16 d, f16 dmin, 12 B scales, 128 B nibbles
    {DType::kQ5_K, "Q5_K", 256, 176, false},
    {DType::kQ6_K, "Q6_K", 256, 210, true},  // 128 B ql, 64 B qh, 16 int8 scales, f16 d
    {DType::kQ8_K, "Q8_K", 256, 292, true},  // f32 d, 256 int8, 16 int16 bsums
    {DType::kBF16, "BF16", 1, 2, true},
};
}  // namespace

std::optional<DTypeLayout> LayoutOf(uint32_t ggml_type) {
  for (const auto& l : kLayouts)
    if (static_cast<uint32_t>(l.type) == ggml_type) return l;
  return std::nullopt;
}

int64_t RowBytes(DType t, int64_t n) {
  auto l = LayoutOf(static_cast<uint32_t>(t));
  if (!l || n < 0 || n % l->block_size != 0) return -1;
  return n / l->block_size * l->block_bytes;
}

}  // namespace brisk
