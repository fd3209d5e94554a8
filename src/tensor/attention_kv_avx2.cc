// The attention kernel compiled for avx2, for the KV precisions other than
// F16 (attention_avx2.cc has F16 and the entry point).
#include <immintrin.h>

#include <cstdint>

#include "tensor/attention.h"

namespace brisk {
namespace {
#include "tensor/attention_impl.inc"
}  // namespace

namespace attention_internal {
void AttentionAvx2OtherKv(const AttentionChunk& a, float* scratch) { AttentionOtherKv(a, scratch); }
}  // namespace attention_internal

}  // namespace brisk
