// The Wilson score interval of a proportion, shared by the rollout judge's
// win rate (gateway/judge.h) and the golden-set pass rate (eval/golden_eval.h).
// Unlike the normal (Wald) interval it stays inside [0, 1] and does not
// collapse to a point at 0/n or n/n, where small samples often sit.
#pragma once

#include <cstdint>

namespace brisk {

struct WilsonBounds {
  double lower = 0;
  double upper = 1;
};

// Normal quantiles: two-sided 95% (the usual rounded value), and one-sided
// 95% (= the lower end of the two-sided 90% interval).
inline constexpr double kWilsonZ95TwoSided = 1.96;
inline constexpr double kWilsonZ95OneSided = 1.6448536269514722;

// The interval of the mean of n outcomes in [0, 1] whose sum is `successes`
// (k of n yes/no outcomes, or a fractional sum of scores such as 1 win,
// 0.5 tie) at normal quantile z. The mean is clamped to [0, 1]; n <= 0
// gives [0, 1] (nothing is known).
WilsonBounds WilsonScoreInterval(double successes, int64_t n, double z);

}  // namespace brisk
