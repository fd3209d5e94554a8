// The forward pass's row-wise and element-wise ops against double math.
#include "tensor/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace brisk {
namespace {

TEST(ElementwiseTest, RmsNormMatchesDouble) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 3.f);
  const int n = 3, d = 77;
  std::vector<float> x(n * d), w(d), y(n * d);
  for (auto& v : x) v = nd(rng);
  for (auto& v : w) v = nd(rng);
  RmsNorm(x.data(), w.data(), y.data(), n, d, 1e-5f);
  for (int t = 0; t < n; ++t) {
    double ss = 0;
    for (int i = 0; i < d; ++i) ss += double{x[t * d + i]} * x[t * d + i];
    const double r = 1.0 / std::sqrt(ss / d + 1e-5);
    for (int i = 0; i < d; ++i) {
      const double want = x[t * d + i] * r * w[i];
      EXPECT_NEAR(y[t * d + i], want, 1e-6 * (1 + std::fabs(want)));
    }
  }
  RmsNorm(x.data(), w.data(), x.data(), n, d, 1e-5f);  // in place
  EXPECT_EQ(x, y);
}

TEST(ElementwiseTest, RopeRotatesLeadingPairsOfEveryHead) {
  const int n = 2, heads = 3, hd = 8, rope_dim = 6, half = rope_dim / 2;
  std::vector<float> x(n * heads * hd), cos(n * half), sin(n * half);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i % 11) - 1.f;
  for (int t = 0; t < n; ++t)
    for (int i = 0; i < half; ++i) {
      const double a = (t + 1) * 0.3 * (i + 1);
      cos[t * half + i] = static_cast<float>(std::cos(a));
      sin[t * half + i] = static_cast<float>(std::sin(a));
    }
  std::vector<float> y = x;
  RopeNorm(y.data(), n, heads, hd, rope_dim, cos.data(), sin.data());
  for (int t = 0; t < n; ++t)
    for (int h = 0; h < heads; ++h) {
      const float* xv = &x[(t * heads + h) * hd];
      const float* yv = &y[(t * heads + h) * hd];
      for (int i = 0; i < half; ++i) {
        const double c = cos[t * half + i], s = sin[t * half + i];
        EXPECT_NEAR(yv[2 * i], xv[2 * i] * c - xv[2 * i + 1] * s, 1e-6);
        EXPECT_NEAR(yv[2 * i + 1], xv[2 * i] * s + xv[2 * i + 1] * c, 1e-6);
      }
      for (int i = rope_dim; i < hd; ++i) EXPECT_EQ(yv[i], xv[i]);  // past rope_dim: untouched
    }
}

TEST(ElementwiseTest, AddInPlace) {
  std::vector<float> x = {1.f, -2.f, 3.5f}, y = {0.5f, 2.f, -1.f};
  AddInPlace(x.data(), y.data(), 3);
  EXPECT_EQ(x, (std::vector<float>{1.5f, 0.f, 2.5f}));
}

// SwiGLU's silu(g) * u: every variant within float rounding of double math,
// over the whole range (large |g| included) and with a short tail.
// Every variant of a gated activation against double-precision math.
void CheckGatedMul(const elementwise_internal::SiluMulFn (&variants)[kNumKernelIsas],
                   double (*act)(double), double abs_tol) {
  std::vector<elementwise_internal::SiluMulFn> fns;
  for (int i = 0; i < kNumKernelIsas; ++i)
    if (CpuCanRun(static_cast<KernelIsa>(i))) fns.push_back(variants[i]);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 4.f);
  std::vector<float> g(1000), u(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    g[i] = nd(rng);
    u[i] = nd(rng);
  }
  g[0] = 0.f, g[1] = -0.f, g[2] = 100.f, g[3] = -100.f, g[4] = 1e30f, g[5] = -1e30f;
  for (auto fn : fns) {
    for (int64_t n : {int64_t{1000}, int64_t{7}}) {
      std::vector<float> out(g.begin(), g.begin() + n);
      fn(out.data(), u.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double want = act(g[i]) * u[i];
        EXPECT_NEAR(out[i], want, 2e-6 * std::fabs(want) + abs_tol) << "g=" << g[i];
      }
    }
  }
}

TEST(ElementwiseTest, SiluMulMatchesReference) {
  ASSERT_EQ(elementwise_internal::kSiluMulVariants[0], elementwise_internal::SiluMulScalar);
  CheckGatedMul(
      elementwise_internal::kSiluMulVariants, [](double x) { return x / (1.0 + std::exp(-x)); },
      1e-30);
}

TEST(ElementwiseTest, GeluTanhMulMatchesReference) {
  ASSERT_EQ(elementwise_internal::kGeluMulVariants[0], elementwise_internal::GeluMulScalar);
  CheckGatedMul(
      elementwise_internal::kGeluMulVariants,
      [](double x) {
        if (std::fabs(x) > 1e10) return x > 0 ? x : 0.0;  // x^3 overflows; the limit
        // 0.5 x (1 + tanh(u)) = x / (1 + e^-2u), without 1 + tanh's cancellation for x << 0.
        const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
        return x / (1.0 + std::exp(-2.0 * u));
      },
      /*abs_tol=*/1e-12);  // far-negative tails (|value| < 1e-12): the cube's float rounding
}

}  // namespace
}  // namespace brisk
