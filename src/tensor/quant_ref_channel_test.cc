#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tensor/float16.h"
#include "tensor/format_traits.h"
#include "tensor/fp8.h"
#include "tensor/kernels.h"
#include "tensor/quant_blocks.h"
#include "tensor/quant_ref.h"
#include "util/thread_pool.h"

namespace brisk::quant_ref {
namespace {

std::vector<float> Gaussian(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

double RelRms(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0, s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    e += (a[i] - b[i]) * double(a[i] - b[i]);
    s += a[i] * double(a[i]);
  }
  return std::sqrt(e / s);
}

TEST(QuantRefChannelTest, Int8HasOneScalePerRow) {
  const int64_t n = 576;  // SmolLM2's d_model: 18 blocks
  auto x = Gaussian(n, 1);
  x[100] = -9.f;  // an outlier sets the whole row's scale
  std::vector<BlockQ8_0> q(n / 32);
  QuantizeInt8PerChannel(x.data(), q.data(), n);
  const float d = HalfToFloat(q[0].d);
  EXPECT_EQ(q[0].d, FloatToHalf(9.f / 127));
  for (const BlockQ8_0& b : q) EXPECT_EQ(b.d, q[0].d);
  EXPECT_EQ(q[100 / 32].qs[100 % 32], -127);
  std::vector<float> back(n);
  DequantizeQ8_0(q.data(), back.data(), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_LE(std::fabs(back[i] - x[i]), d / 2 + 1e-6f) << i;
  // Coarser than Q8_0's scale per 32 values on the same row.
  std::vector<BlockQ8_0> q8(n / 32);
  QuantizeQ8_0(x.data(), q8.data(), n);
  std::vector<float> back8(n);
  DequantizeQ8_0(q8.data(), back8.data(), n);
  EXPECT_GT(RelRms(x, back), RelRms(x, back8));
}

TEST(QuantRefChannelTest, Int4HasOneScalePerGroupOf128) {
  const int64_t n = 576;  // groups of 128, 128, 128, 128, 64
  auto x = Gaussian(n, 2);
  std::vector<BlockQ4_0> q(n / 32);
  QuantizeInt4Group128(x.data(), q.data(), n);
  for (int64_t b = 0; b < n / 32; ++b) EXPECT_EQ(q[b].d, q[(b / 4) * 4].d) << b;
  EXPECT_NE(q[0].d, q[4].d);
  std::vector<float> back(n);
  DequantizeQ4_0(q.data(), back.data(), n);
  for (int64_t g = 0; g < n; g += 128) {
    const float d = std::fabs(HalfToFloat(q[g / 32].d));
    for (int64_t i = g; i < std::min<int64_t>(n, g + 128); ++i) {
      // Nearest level, except above +7 d (the -8 side holds the largest magnitude).
      const float bound = x[i] * (HalfToFloat(q[g / 32].d) < 0 ? -1 : 1) > 7 * d
                              ? std::fabs(x[i]) - 7 * d + 1e-6f
                              : d / 2 + 1e-6f;
      EXPECT_LE(std::fabs(back[i] - x[i]), bound) << i;
    }
  }
  // Between Q4_0 (a scale per 32) and nothing: measured 0.098 on N(0,1).
  EXPECT_LT(RelRms(x, back), 0.12);
  std::vector<BlockQ4_0> q4(n / 32);
  QuantizeQ4_0(x.data(), q4.data(), n);
  std::vector<float> back4(n);
  DequantizeQ4_0(q4.data(), back4.data(), n);
  EXPECT_GT(RelRms(x, back), RelRms(x, back4));
}

TEST(QuantRefChannelTest, ZeroRowsStayZero) {
  std::vector<float> x(64, 0.f), back(64, 1.f);
  std::vector<BlockQ8_0> q8(2);
  QuantizeInt8PerChannel(x.data(), q8.data(), 64);
  DequantizeQ8_0(q8.data(), back.data(), 64);
  for (float v : back) EXPECT_EQ(v, 0.f);
  std::vector<BlockQ4_0> q4(2);
  QuantizeInt4Group128(x.data(), q4.data(), 64);
  DequantizeQ4_0(q4.data(), back.data(), 64);
  for (float v : back) EXPECT_EQ(v, 0.f);
}

TEST(QuantRefChannelTest, Fp8HasOneScalePerRowAndRoundsEachValue) {
  const int64_t n = 576;
  auto x = Gaussian(n, 3);
  std::vector<BlockFP8> q(n / 32);
  QuantizeFP8PerChannel(x.data(), q.data(), n);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const uint16_t dh = FloatToHalf(amax / kE4M3Max);
  const float d = HalfToFloat(dh);
  std::vector<float> back(n);
  DequantizeFP8(q.data(), back.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(q[i / 32].d, dh);
    EXPECT_EQ(q[i / 32].q[i % 32], FloatToE4M3(x[i] / d)) << i;
    EXPECT_EQ(back[i], d * E4M3ToFloat(q[i / 32].q[i % 32])) << i;
    // 3 mantissa bits: within 1/16 of the value, or half the subnormal step.
    EXPECT_LE(std::fabs(back[i] - x[i]), std::fabs(x[i]) / 16 + d * 0x1p-10f) << i;
  }
}

// The kernels' E4M3 decode (f16 bit shuffle) against E4M3ToFloat for every
// finite code: row 0 holds all of them, and token t is the one-hot vector e_t,
// so y[t] is the decoded weight t.
TEST(QuantRefChannelTest, Fp8KernelsDecodeEveryCode) {
  constexpr int64_t k = 256;
  std::vector<BlockFP8> row(k / 32);
  for (int64_t i = 0; i < k; ++i) {
    const auto code = static_cast<uint8_t>(i);
    row[i / 32].d = FloatToHalf(0.5f);
    row[i / 32].q[i % 32] = (code & 0x7F) == 0x7F ? 0 : code;  // NaN codes: never written
  }
  auto w = PrepareMatMulWeight(DType::kFP8_E4M3, row.data(), 1, k);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::vector<float> x(k * k, 0.f), y(k, -1.f);
  for (int64_t t = 0; t < k; ++t) x[t * k + t] = 1.f;
  ThreadPool pool(2);
  MatMulScratch scratch;
  MatMul(*w, x.data(), k, y.data(), pool, scratch);
  for (int64_t t = 0; t < k; ++t)
    EXPECT_EQ(y[t], 0.5f * E4M3ToFloat(row[t / 32].q[t % 32])) << "code " << t;
}

// One to three tokens (the decode path: four accumulators a row) against the
// dequantized weights' dot products in double.
TEST(QuantRefChannelTest, Fp8MatVecMatchesDequantizedRows) {
  constexpr int64_t k = 576, rows = 37;
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<float> wf(rows * k);
  for (auto& v : wf) v = g(rng) * 0.05f;
  std::vector<BlockFP8> q(rows * k / 32);
  for (int64_t r = 0; r < rows; ++r) QuantizeFP8PerChannel(&wf[r * k], &q[r * k / 32], k);
  std::vector<float> back(rows * k);
  DequantizeFP8(q.data(), back.data(), rows * k);
  auto w = PrepareMatMulWeight(DType::kFP8_E4M3, q.data(), rows, k);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ThreadPool pool(2);
  MatMulScratch scratch;
  for (int64_t n : {1, 3}) {
    std::vector<float> x(n * k), y(n * rows, 0.f);
    for (auto& v : x) v = g(rng);
    MatMul(*w, x.data(), n, y.data(), pool, scratch);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t r = 0; r < rows; ++r) {
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
          ref += double{back[r * k + i]} * x[t * k + i];
          mag += std::fabs(double{back[r * k + i]} * x[t * k + i]);
        }
        EXPECT_NEAR(y[t * rows + r], ref, 1e-5 * mag) << "token " << t << " row " << r;
      }
  }
}

}  // namespace
}  // namespace brisk::quant_ref
