// The attention kernel compiled for avx2 (flags from CMakeLists.txt).
#include <immintrin.h>

#include <cstdint>

#include "tensor/attention.h"

namespace brisk {
namespace {
#include "tensor/attention_impl.inc"
}  // namespace

namespace attention_internal {
void AttentionAvx2(const AttentionChunk& a, float* scratch) { AttentionImpl(a, scratch); }
}  // namespace attention_internal

}  // namespace brisk
