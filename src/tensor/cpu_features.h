// What this CPU (and OS) can run, read once with cpuid/xgetbv. Used to pick
// the kernel variant at start-up; works the same under gcc and clang.
#pragma once

namespace brisk {

struct CpuFeatures {
  bool avx2 = false;    // AVX2 + FMA + F16C + BMI2, with OS-enabled YMM state
  bool avx512 = false;  // F, BW, VL, DQ, VNNI, BF16, with OS-enabled ZMM state
};

const CpuFeatures& GetCpuFeatures();

}  // namespace brisk
