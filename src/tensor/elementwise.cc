#include "tensor/elementwise.h"

#include <cstring>

#include "tensor/cpu_features.h"

namespace brisk {
namespace {
#include "tensor/elementwise_impl.inc"

using SiluMulFn = void (*)(float*, const float*, int64_t);

SiluMulFn Select() {
  switch (SelectedKernelIsa()) {
    case KernelIsa::kAvx512: return elementwise_internal::SiluMulAvx512;
    case KernelIsa::kAvx2: return elementwise_internal::SiluMulAvx2;
    case KernelIsa::kScalar: break;
  }
  return elementwise_internal::SiluMulScalar;
}
}  // namespace

namespace elementwise_internal {
void SiluMulScalar(float* gate, const float* up, int64_t n) { SiluMulImpl(gate, up, n); }
}  // namespace elementwise_internal

void SiluMulF32(float* gate, const float* up, int64_t n) {
  static const SiluMulFn fn = Select();
  fn(gate, up, n);
}

}  // namespace brisk
