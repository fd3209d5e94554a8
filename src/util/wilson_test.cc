// WilsonScoreInterval against tabulated intervals, two-sided (the rollout
// judge's win rate) and one-sided (the golden-set pass rate's lower bound).
#include "util/wilson.h"

#include <gtest/gtest.h>

namespace brisk {
namespace {

TEST(WilsonTest, TwoSided95KnownValues) {
  // Wilson 95% intervals (z = 1.96) of k successes in n, as tabulated.
  struct Case {
    double sum;
    int64_t n;
    double lower, upper;
  };
  const Case cases[] = {{5, 10, 0.2366, 0.7634},
                        {8, 10, 0.4902, 0.9433},
                        {0, 10, 0.0, 0.2775},
                        {10, 10, 0.7225, 1.0},
                        {50, 100, 0.4038, 0.5962}};
  for (const Case& c : cases) {
    WilsonBounds w = WilsonScoreInterval(c.sum, c.n, kWilsonZ95TwoSided);
    EXPECT_NEAR(w.lower, c.lower, 1e-4) << c.sum << "/" << c.n;
    EXPECT_NEAR(w.upper, c.upper, 1e-4) << c.sum << "/" << c.n;
  }
}

TEST(WilsonTest, OneSided95LowerBound) {
  auto lower = [](int passed, int n) {
    return WilsonScoreInterval(passed, n, kWilsonZ95OneSided).lower;
  };
  EXPECT_EQ(lower(0, 10), 0);
  // One-sided 95% (z = 1.6449, the two-sided 90% interval's lower end),
  // computed separately in Python from Wilson's closed form.
  EXPECT_NEAR(lower(18, 24), 0.5845, 1e-4);
  EXPECT_NEAR(lower(10, 10), 0.7871, 1e-4);
  EXPECT_NEAR(lower(50, 100), 0.4188, 1e-4);
  EXPECT_LT(lower(9, 10), 0.9);
}

TEST(WilsonTest, NoSamplesIsTheWholeRange) {
  WilsonBounds none = WilsonScoreInterval(0, 0, kWilsonZ95TwoSided);
  EXPECT_EQ(none.lower, 0);
  EXPECT_EQ(none.upper, 1);
  none = WilsonScoreInterval(3, -1, kWilsonZ95OneSided);
  EXPECT_EQ(none.lower, 0);
  EXPECT_EQ(none.upper, 1);
}

TEST(WilsonTest, MeanOutsideZeroOneIsClamped) {
  // Floating-point score sums can overshoot n or undershoot 0 a little.
  WilsonBounds over = WilsonScoreInterval(10 + 1e-9, 10, kWilsonZ95TwoSided);
  WilsonBounds all = WilsonScoreInterval(10, 10, kWilsonZ95TwoSided);
  EXPECT_EQ(over.lower, all.lower);
  EXPECT_EQ(over.upper, 1);
  WilsonBounds under = WilsonScoreInterval(-1e-9, 10, kWilsonZ95TwoSided);
  EXPECT_EQ(under.lower, 0);
  EXPECT_EQ(under.upper, WilsonScoreInterval(0, 10, kWilsonZ95TwoSided).upper);
}

}  // namespace
}  // namespace brisk
