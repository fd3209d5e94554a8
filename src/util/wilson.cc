#include "util/wilson.h"

#include <algorithm>
#include <cmath>

namespace brisk {

WilsonBounds WilsonScoreInterval(double successes, int64_t n, double z) {
  WilsonBounds w;
  if (n <= 0) return w;
  const double nn = static_cast<double>(n);
  // A sum of floating-point scores can land a hair outside [0, n].
  const double p = std::clamp(successes / nn, 0.0, 1.0);
  const double z2 = z * z;
  const double centre = p + z2 / (2 * nn);
  const double spread = z * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  const double scale = 1 + z2 / nn;
  w.lower = std::max(0.0, (centre - spread) / scale);
  w.upper = std::min(1.0, (centre + spread) / scale);
  return w;
}

}  // namespace brisk
