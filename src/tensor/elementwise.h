// Element-wise activation kernels of the forward pass, compiled per CPU
// target like the matmul and attention kernels (BRISK_KERNELS forces one).
#pragma once

#include <cstdint>

namespace brisk {

// gate[i] = silu(gate[i]) * up[i] (SwiGLU), silu(g) = g * sigmoid(g). Every
// element takes the same arithmetic wherever it sits in the array (16 lanes
// at a time; a short tail is padded), so results do not depend on how a
// batch is split.
void SiluMulF32(float* gate, const float* up, int64_t n);

// Entry points per target (internal; tests compare them).
namespace elementwise_internal {
void SiluMulScalar(float* gate, const float* up, int64_t n);
void SiluMulAvx2(float* gate, const float* up, int64_t n);
void SiluMulAvx512(float* gate, const float* up, int64_t n);
}  // namespace elementwise_internal

}  // namespace brisk
