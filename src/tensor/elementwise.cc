#include "tensor/elementwise.h"

#include <cmath>
#include <cstring>

namespace brisk {
namespace {
#include "tensor/elementwise_impl.inc"
}  // namespace

namespace elementwise_internal {
void SiluMulScalar(float* gate, const float* up, int64_t n) { SiluMulImpl(gate, up, n); }
const SiluMulFn kSiluMulVariants[kNumKernelIsas] = {SiluMulScalar, SiluMulAvx2, SiluMulAvx512};
void GeluMulScalar(float* gate, const float* up, int64_t n) { GeluMulImpl(gate, up, n); }
const SiluMulFn kGeluMulVariants[kNumKernelIsas] = {GeluMulScalar, GeluMulAvx2, GeluMulAvx512};
}  // namespace elementwise_internal

void RmsNorm(const float* x, const float* w, float* y, int64_t n, int d, float eps) {
  for (int64_t t = 0; t < n; ++t) {
    const float* xr = x + t * d;
    float* yr = y + t * d;
    double ss = 0;  // double: a long row of squares keeps its low bits
    for (int i = 0; i < d; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float r = static_cast<float>(1.0 / std::sqrt(ss / d + eps));
    for (int i = 0; i < d; ++i) yr[i] = xr[i] * r * w[i];
  }
}

namespace {
// Rotates pairs of each head's first rope_dim dims: (2i, 2i+1) or, NeoX, (i, i + rope_dim/2).
template <bool kNeox>
void Rope(float* x, int64_t n, int n_heads, int head_dim, int rope_dim, const float* cos,
          const float* sin) {
  const int half = rope_dim / 2;
  for (int64_t t = 0; t < n; ++t) {
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        float& a = v[kNeox ? i : 2 * i];
        float& b = v[kNeox ? i + half : 2 * i + 1];
        const float a0 = a, b0 = b;
        a = a0 * c[i] - b0 * s[i];
        b = a0 * s[i] + b0 * c[i];
      }
    }
  }
}
}  // namespace

void RopeNorm(float* x, int64_t n, int n_heads, int head_dim, int rope_dim, const float* cos,
              const float* sin) {
  Rope<false>(x, n, n_heads, head_dim, rope_dim, cos, sin);
}

void RopeNeox(float* x, int64_t n, int n_heads, int head_dim, int rope_dim, const float* cos,
              const float* sin) {
  Rope<true>(x, n, n_heads, head_dim, rope_dim, cos, sin);
}

void GeluTanhMulF32(float* gate, const float* up, int64_t n) {
  static const elementwise_internal::SiluMulFn fn =
      elementwise_internal::kGeluMulVariants[SelectedKernelIsaIndex()];
  fn(gate, up, n);
}

void ScaleInPlace(float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void SiluMulF32(float* gate, const float* up, int64_t n) {
  static const elementwise_internal::SiluMulFn fn =
      elementwise_internal::kSiluMulVariants[SelectedKernelIsaIndex()];
  fn(gate, up, n);
}

void AddInPlace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace brisk
