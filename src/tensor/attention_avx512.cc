// The attention kernel compiled for avx512 (flags from CMakeLists.txt): the F16
// cache here, the other KV precisions in attention_kv_avx512.cc.
#include <immintrin.h>

#include <cstdint>

#include "tensor/attention.h"

namespace brisk {
namespace {
#include "tensor/attention_impl.inc"
}  // namespace

namespace attention_internal {
void AttentionAvx512(const AttentionChunk& a, float* scratch) {
  if (a.kv.type == KvType::kF16) return AttentionF16(a, scratch);
  AttentionAvx512OtherKv(a, scratch);
}
}  // namespace attention_internal

}  // namespace brisk
