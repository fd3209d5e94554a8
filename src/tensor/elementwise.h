// Row-wise and element-wise ops of the forward pass: RMSNorm, RoPE, SwiGLU's
// silu(gate)*up, the residual add. Small next to the matmuls (O(tokens x
// width)). SiluMulF32 is compiled per CPU target like the matmul and
// attention kernels (its variant table below); the others are plain loops.
#pragma once

#include <cstdint>

#include "tensor/cpu_features.h"

namespace brisk {

// y[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w, for n rows of width d. y may alias x.
void RmsNorm(const float* x, const float* w, float* y, int64_t n, int d, float eps);

// Rotates pairs (x[2i], x[2i+1]) of the first rope_dim dims of each head
// (llama "normal" RoPE) by the per-token angles in cos/sin [n][rope_dim/2].
// x is [n][n_heads][head_dim].
void RopeNorm(float* x, int64_t n, int n_heads, int head_dim, int rope_dim, const float* cos,
              const float* sin);

// Rotates pairs (x[i], x[i + rope_dim/2]) of each head (NeoX-style RoPE, as
// Gemma and Qwen use) by the same per-token angles.
void RopeNeox(float* x, int64_t n, int n_heads, int head_dim, int rope_dim, const float* cos,
              const float* sin);

// gate[i] = gelu(gate[i]) * up[i] (GeGLU), gelu with the tanh approximation:
// 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))).
void GeluTanhMulF32(float* gate, const float* up, int64_t n);

// x[i] *= s
void ScaleInPlace(float* x, float s, int64_t n);

// gate[i] = silu(gate[i]) * up[i] (SwiGLU), silu(g) = g * sigmoid(g). Every
// element takes the same arithmetic wherever it sits in the array (16 lanes
// at a time; a short tail is padded), so results do not depend on how a
// batch is split.
void SiluMulF32(float* gate, const float* up, int64_t n);

// x[i] += y[i]
void AddInPlace(float* x, const float* y, int64_t n);

// Entry points per target (internal; tests compare them).
namespace elementwise_internal {
using SiluMulFn = void (*)(float* gate, const float* up, int64_t n);
void SiluMulScalar(float* gate, const float* up, int64_t n);
void SiluMulAvx2(float* gate, const float* up, int64_t n);
void SiluMulAvx512(float* gate, const float* up, int64_t n);
void GeluMulScalar(float* gate, const float* up, int64_t n);
void GeluMulAvx2(float* gate, const float* up, int64_t n);
void GeluMulAvx512(float* gate, const float* up, int64_t n);
// GeluTanhMulF32's variant table.
extern const SiluMulFn kGeluMulVariants[kNumKernelIsas];
// SiluMulF32's variant table, indexed by KernelIsa.
extern const SiluMulFn kSiluMulVariants[kNumKernelIsas];
}  // namespace elementwise_internal

}  // namespace brisk
