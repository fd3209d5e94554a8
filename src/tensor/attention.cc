#include "tensor/attention.h"

#include <cstring>

#include "tensor/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace brisk {
namespace {
#include "tensor/attention_impl.inc"
}  // namespace

namespace attention_internal {
void AttentionScalar(const AttentionChunk& a, float* scratch) { AttentionImpl(a, scratch); }
const AttentionFn kVariants[kNumKernelIsas] = {AttentionScalar, AttentionAvx2, AttentionAvx512};
}  // namespace attention_internal

int64_t AttentionScratchFloats(int64_t n_ctx, int head_dim, int block_size) {
  const int64_t n_blocks = (n_ctx + block_size - 1) / block_size;
  const int64_t f32_copy = 2 * n_blocks * head_dim * block_size;
  return (f32_copy > 16 * kAttentionTile ? f32_copy : 16 * kAttentionTile) + 64;
}

void AttentionCausal(const AttentionChunk& a, float* scratch) {
  static const attention_internal::AttentionFn fn =
      attention_internal::kVariants[SelectedKernelIsaIndex()];
  fn(a, scratch);
}

}  // namespace brisk
