// Row-wise elementwise ops of the forward pass. Small next to the matmuls
// (O(tokens x width)); plain loops the compiler vectorizes.
#pragma once

#include <cstdint>

namespace brisk {

// y[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w, for n rows of width d. y may alias x.
void RmsNorm(const float* x, const float* w, float* y, int64_t n, int d, float eps);
// Rotates pairs (x[2i], x[2i+1]) of the first rope_dim dims of each head
// (llama "normal" RoPE) by the per-token angles in cos/sin [n][rope_dim/2].
void RopeNorm(float* x, int64_t n, int n_heads, int head_dim, int rope_dim, const float* cos,
              const float* sin);
// gate = silu(gate) * up, silu(g) = g / (1 + e^-g).
void SiluMul(float* gate, const float* up, int64_t n);
// x += y
void AddInPlace(float* x, const float* y, int64_t n);

}  // namespace brisk
