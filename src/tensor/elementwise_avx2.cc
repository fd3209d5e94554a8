// The element-wise kernels compiled for avx2 (flags from CMakeLists.txt).
#include <cstdint>

#include "tensor/elementwise.h"

namespace brisk {
namespace {
#include "tensor/elementwise_impl.inc"
}  // namespace

namespace elementwise_internal {
void SiluMulAvx2(float* gate, const float* up, int64_t n) { SiluMulImpl(gate, up, n); }
void GeluMulAvx2(float* gate, const float* up, int64_t n) { GeluMulImpl(gate, up, n); }
}  // namespace elementwise_internal

}  // namespace brisk
