// What this CPU (and OS) can run, read once with cpuid/xgetbv, and the one
// kernel-variant choice every op kind follows; works the same under gcc and
// clang. Included by per-ISA files (through attention.h): declarations only.
//
// Dispatch: each op kind (matmul, attention, element-wise) has one table of
// its variants indexed by KernelIsa (the matmul KernelTables, the attention
// and SiLU*up function tables) and reads its entry at SelectedKernelIsa()
// once, on first use. Tests walk the same tables over CpuCanRun() ISAs.
#pragma once

namespace brisk {

// Kernel variants, in the order of every op's variant table.
enum class KernelIsa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
constexpr int kNumKernelIsas = 3;

// Whether this CPU (and OS) can run code compiled for `isa`: scalar always;
// avx2 = AVX2 + FMA + F16C + BMI2 with OS-enabled YMM state; avx512 = that
// plus F, BW, VL, DQ, VNNI, BF16 with OS-enabled ZMM state.
bool CpuCanRun(KernelIsa isa);
// BRISK_KERNELS=scalar|avx2|avx512 when this CPU can run it, else the widest
// the CPU has. Read once.
KernelIsa SelectedKernelIsa();
// The index of SelectedKernelIsa() in a variant table.
int SelectedKernelIsaIndex();

}  // namespace brisk
