#include "loadgen/arrivals.h"

#include <cmath>

#include "loadgen/rng.h"

namespace brisk::loadgen {

namespace {
constexpr uint64_t kArrivalStream = 0x6172726976616c73;  // "arrivals"
}

Expected<std::vector<double>> ArrivalOffsets(const ArrivalSpec& spec, int64_t n) {
  if (!(spec.rate > 0)) return InvalidArgument("request rate must be > 0 (got {})", spec.rate);
  if (!(spec.burstiness > 0) || !std::isfinite(spec.burstiness))
    return InvalidArgument("burstiness must be a finite number > 0 (got {})", spec.burstiness);
  if (n < 0) return InvalidArgument("negative request count {}", n);
  std::vector<double> offsets(static_cast<size_t>(n), 0.0);
  if (std::isinf(spec.rate)) return offsets;
  Rng rng(spec.seed, kArrivalStream);
  const double scale = 1.0 / (spec.rate * spec.burstiness);
  double t = 0;
  for (int64_t i = 1; i < n; ++i) {
    t += rng.Gamma(spec.burstiness) * scale;
    offsets[static_cast<size_t>(i)] = t;
  }
  return offsets;
}

}  // namespace brisk::loadgen
