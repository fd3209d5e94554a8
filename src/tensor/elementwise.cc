#include "tensor/elementwise.h"

#include <cstdlib>
#include <cstring>

#include "tensor/cpu_features.h"

namespace brisk {
namespace {
#include "tensor/elementwise_impl.inc"

using SiluMulFn = void (*)(float*, const float*, int64_t);

SiluMulFn Select() {
#if defined(__x86_64__)
  const char* force = std::getenv("BRISK_KERNELS");
  const bool has512 = GetCpuFeatures().avx512;
  const bool has2 = GetCpuFeatures().avx2;
  if (force && std::strcmp(force, "scalar") == 0) return elementwise_internal::SiluMulScalar;
  if (force && std::strcmp(force, "avx2") == 0 && has2) return elementwise_internal::SiluMulAvx2;
  if (has512) return elementwise_internal::SiluMulAvx512;
  if (has2) return elementwise_internal::SiluMulAvx2;
#endif
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
