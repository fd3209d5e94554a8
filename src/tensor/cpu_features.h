// What this CPU (and OS) can run, read once with cpuid/xgetbv. Used to pick
// the kernel variant at start-up; works the same under gcc and clang.
#pragma once

namespace brisk {

struct CpuFeatures {
  bool avx2 = false;    // AVX2 + FMA + F16C + BMI2, with OS-enabled YMM state
  bool avx512 = false;  // F, BW, VL, DQ, VNNI, BF16, with OS-enabled ZMM state
};

const CpuFeatures& GetCpuFeatures();

// The kernel variant every dispatcher (matmul, attention, element-wise) uses:
// BRISK_KERNELS=scalar|avx2|avx512 when this CPU can run it, else the widest
// the CPU has. Read once.
enum class KernelIsa { kScalar, kAvx2, kAvx512 };
KernelIsa SelectedKernelIsa();

}  // namespace brisk
