#include "loadgen/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace brisk::loadgen {
namespace {

struct GapStats {
  double mean = 0, cv = 0, below_mean = 0;
};

GapStats Gaps(double rate, double burstiness, int64_t n, uint64_t seed = 1) {
  auto offsets = ArrivalOffsets({rate, burstiness, seed}, n);
  EXPECT_TRUE(offsets.ok());
  std::vector<double> gaps;
  for (size_t i = 1; i < offsets->size(); ++i) gaps.push_back((*offsets)[i] - (*offsets)[i - 1]);
  GapStats s;
  for (double g : gaps) s.mean += g;
  s.mean /= static_cast<double>(gaps.size());
  double var = 0;
  for (double g : gaps) {
    var += (g - s.mean) * (g - s.mean);
    s.below_mean += g < s.mean;
  }
  var /= static_cast<double>(gaps.size());
  s.cv = std::sqrt(var) / s.mean;
  s.below_mean /= static_cast<double>(gaps.size());
  return s;
}

TEST(Arrivals, PoissonRateAndDispersion) {
  // 100k exponential gaps: the mean's standard error is CV / sqrt(n) = 0.32%,
  // the CV's about 0.32% too; tolerances are 5 standard errors.
  GapStats s = Gaps(10.0, 1.0, 100001);
  EXPECT_NEAR(s.mean, 0.1, 0.1 * 5 / std::sqrt(1e5));
  EXPECT_NEAR(s.cv, 1.0, 0.016);
  // P(gap < mean) = 1 - 1/e for an exponential.
  EXPECT_NEAR(s.below_mean, 1.0 - std::exp(-1.0), 0.0075);  // 5 standard errors
}

TEST(Arrivals, GammaDispersionIsOneOverSqrtShape) {
  for (double shape : {0.25, 0.5, 2.0, 4.0}) {
    GapStats s = Gaps(5.0, shape, 100001, 7);
    const double cv = 1.0 / std::sqrt(shape);
    // Mean: 5 standard errors (cv / sqrt(n)). CV: its spread over seeds is at
    // most ~0.4% of itself for these shapes; allow 2%.
    EXPECT_NEAR(s.mean, 0.2, 0.2 * 5 * cv / std::sqrt(1e5)) << "shape " << shape;
    EXPECT_NEAR(s.cv, cv, 0.02 * cv) << "shape " << shape;
  }
}

TEST(Arrivals, FirstAtZeroNondecreasingDeterministic) {
  auto a = ArrivalOffsets({3.0, 0.5, 42}, 1000);
  auto b = ArrivalOffsets({3.0, 0.5, 42}, 1000);
  auto c = ArrivalOffsets({3.0, 0.5, 43}, 1000);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ((*a)[0], 0.0);
  for (size_t i = 1; i < a->size(); ++i) EXPECT_GE((*a)[i], (*a)[i - 1]);
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  // A shorter schedule is a prefix of a longer one.
  auto shorter = ArrivalOffsets({3.0, 0.5, 42}, 10);
  EXPECT_TRUE(std::equal(shorter->begin(), shorter->end(), a->begin()));
}

TEST(Arrivals, InfiniteRateSendsAllAtOnce) {
  auto a = ArrivalOffsets({std::numeric_limits<double>::infinity(), 1.0, 0}, 5);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, std::vector<double>(5, 0.0));
}

TEST(Arrivals, RejectsBadParameters) {
  EXPECT_FALSE(ArrivalOffsets({0.0, 1.0, 0}, 5).ok());
  EXPECT_FALSE(ArrivalOffsets({-1.0, 1.0, 0}, 5).ok());
  EXPECT_FALSE(ArrivalOffsets({1.0, 0.0, 0}, 5).ok());
  EXPECT_FALSE(ArrivalOffsets({std::nan(""), 1.0, 0}, 5).ok());
}

}  // namespace
}  // namespace brisk::loadgen
