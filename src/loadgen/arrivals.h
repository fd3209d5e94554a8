// The open-loop arrival process: when each request is sent, independent of
// how fast the server answers. Gaps between arrivals are i.i.d. gamma with
// shape k = burstiness and mean 1 / rate (scale 1 / (rate * k)), as in vLLM's
// benchmark: k = 1 is a Poisson process (exponential gaps, coefficient of
// variation 1); k < 1 is burstier (CV = 1 / sqrt(k) > 1); k > 1 is smoother.
// The first request goes at time 0. An infinite rate sends everything at 0.
#pragma once

#include <cstdint>
#include <vector>

#include "util/status.h"

namespace brisk::loadgen {

struct ArrivalSpec {
  double rate = 0;  // requests per second; +inf = all at once
  double burstiness = 1.0;
  uint64_t seed = 0;
};

// Send offsets in seconds from the start of the measured phase, nondecreasing.
// Deterministic in (spec, n).
Expected<std::vector<double>> ArrivalOffsets(const ArrivalSpec& spec, int64_t n);

}  // namespace brisk::loadgen
