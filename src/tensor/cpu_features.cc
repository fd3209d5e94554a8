#include "tensor/cpu_features.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace brisk {
namespace {

struct CpuFeatures {
  bool avx2 = false;
  bool avx512 = false;
};

CpuFeatures Detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28),
             f16c = c & (1u << 29);
  if (!osxsave || !avx) return f;
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool ymm_os = (xcr0_lo & 0x6) == 0x6;
  const bool zmm_os = (xcr0_lo & 0xe6) == 0xe6;
  unsigned b7 = 0, c7 = 0, a71 = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    b7 = b;
    c7 = c;
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) a71 = a;
  const bool avx2 = b7 & (1u << 5), bmi2 = b7 & (1u << 8);
  const bool avx512f = b7 & (1u << 16), avx512dq = b7 & (1u << 17), avx512bw = b7 & (1u << 30),
             avx512vl = b7 & (1u << 31), avx512vnni = c7 & (1u << 11), avx512bf16 = a71 & (1u << 5);
  f.avx2 = ymm_os && avx2 && fma && f16c && bmi2;
  f.avx512 =
      f.avx2 && zmm_os && avx512f && avx512dq && avx512bw && avx512vl && avx512vnni && avx512bf16;
#endif
  return f;
}

const CpuFeatures& GetCpuFeatures() {
  static const CpuFeatures f = Detect();
  return f;
}

}  // namespace

bool CpuCanRun(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kScalar: return true;
    case KernelIsa::kAvx2: return GetCpuFeatures().avx2;
    case KernelIsa::kAvx512: return GetCpuFeatures().avx512;
  }
  return false;
}

KernelIsa SelectedKernelIsa() {
  static const KernelIsa isa = [] {
    const char* force = std::getenv("BRISK_KERNELS");
    if (force != nullptr) {
      if (std::strcmp(force, "scalar") == 0) return KernelIsa::kScalar;
      if (std::strcmp(force, "avx2") == 0 && CpuCanRun(KernelIsa::kAvx2)) return KernelIsa::kAvx2;
      if (std::strcmp(force, "avx512") == 0 && CpuCanRun(KernelIsa::kAvx512))
        return KernelIsa::kAvx512;
    }
    if (CpuCanRun(KernelIsa::kAvx512)) return KernelIsa::kAvx512;
    if (CpuCanRun(KernelIsa::kAvx2)) return KernelIsa::kAvx2;
    return KernelIsa::kScalar;
  }();
  return isa;
}

int SelectedKernelIsaIndex() { return static_cast<int>(SelectedKernelIsa()); }

}  // namespace brisk
