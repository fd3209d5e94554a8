// Tensor element types, numbered as ggml/GGUF number them, and their block
// layout. A quantized row of n elements is n / block_size blocks of
// block_bytes each. Kernels live in tensor/kernels.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace brisk {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kBF16 = 30,
};

struct DTypeLayout {
  DType type;
  const char* name;
  int block_size;   // elements per block (1 for plain floats)
  int block_bytes;  // bytes per block
  bool supported;   // Brisk has kernels for it (as weights or activations)
};

// Layout of a ggml type id, or nullopt for an id this build does not know.
std::optional<DTypeLayout> LayoutOf(uint32_t ggml_type);
inline const char* DTypeName(DType t) {
  auto l = LayoutOf(static_cast<uint32_t>(t));
  return l ? l->name : "unknown";
}
// Bytes of a row of n elements; -1 if n is not a multiple of the block size.
int64_t RowBytes(DType t, int64_t n);

}  // namespace brisk
