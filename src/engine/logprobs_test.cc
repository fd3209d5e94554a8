#include "engine/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace brisk {
namespace {

// log-softmax in double, the slow obvious way.
std::vector<double> LogSoftmax(const std::vector<float>& l) {
  double m = -INFINITY;
  for (float x : l) m = std::max(m, double(x));
  double z = 0;
  for (float x : l) z += std::exp(double(x) - m);
  std::vector<double> out;
  for (float x : l) out.push_back(double(x) - m - std::log(z));
  return out;
}

TEST(LogprobsTest, MatchesLogSoftmaxAndSortsTheTopK) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-8, 8);
  for (size_t vocab : {1u, 5u, 37u, 49152u}) {
    std::vector<float> l(vocab);
    for (float& x : l) x = u(rng);
    const std::vector<double> want = LogSoftmax(l);
    RowLogprobs row;
    const int32_t tok = static_cast<int32_t>(vocab / 2);
    TokenLogprob r = MakeTokenLogprob(l, tok, 20, &row);
    EXPECT_EQ(r.token, tok);
    EXPECT_NEAR(r.logprob, want[tok], 1e-4);
    ASSERT_EQ(r.top.size(), std::min<size_t>(20, vocab));
    std::vector<size_t> order(vocab);
    for (size_t i = 0; i < vocab; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return l[a] > l[b]; });
    for (size_t i = 0; i < r.top.size(); ++i) {
      EXPECT_EQ(r.top[i].first, static_cast<int32_t>(order[i])) << i;
      EXPECT_NEAR(r.top[i].second, want[order[i]], 1e-4);
    }
  }
}

TEST(LogprobsTest, TiesGoToTheLowerIdAndZeroTopIsEmpty) {
  std::vector<float> l = {1, 3, 3, 0, 3};
  RowLogprobs row;
  TokenLogprob r = MakeTokenLogprob(l, 3, 2, &row);
  ASSERT_EQ(r.top.size(), 2u);
  EXPECT_EQ(r.top[0].first, 1);
  EXPECT_EQ(r.top[1].first, 2);
  EXPECT_TRUE(MakeTokenLogprob(l, 0, 0, &row).top.empty());
  // Uniform over three tokens of weight e^3 and two lighter ones.
  const double z = 3 * std::exp(3.0) + std::exp(1.0) + 1;
  EXPECT_NEAR(r.logprob, 0 - std::log(z), 1e-5);
}

TEST(LogprobsTest, MinusInfinityRowsAndIdsOutsideTheRow) {
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> l = {ninf, 2, ninf};
  RowLogprobs row;
  TokenLogprob r = MakeTokenLogprob(l, 0, 3, &row);
  EXPECT_EQ(r.logprob, ninf);
  EXPECT_EQ(r.top[0].first, 1);
  EXPECT_NEAR(r.top[0].second, 0.0, 1e-6);
  EXPECT_EQ(r.top[1].second, ninf);
  EXPECT_EQ(row.Of(-1), ninf);
  EXPECT_EQ(row.Of(3), ninf);
  std::vector<float> dead = {ninf, ninf};
  EXPECT_EQ(MakeTokenLogprob(dead, 1, 1, &row).logprob, ninf);
}

}  // namespace
}  // namespace brisk
