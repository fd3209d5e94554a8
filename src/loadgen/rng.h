// A deterministic random source for workloads and arrival times. Everything is
// built on std::mt19937_64 (whose output sequence the standard fixes) with our
// own transforms, so a seed gives the same workload and the same schedule on
// every platform and standard library (std::*_distribution do not promise that).
#pragma once

#include <cstdint>
#include <random>

namespace brisk::loadgen {

// SplitMix64: mixes (seed, stream, index) into independent generator seeds, so
// item i of a stream does not depend on how many items are drawn before it.
uint64_t MixSeed(uint64_t seed, uint64_t stream, uint64_t index = 0);

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  Rng(uint64_t seed, uint64_t stream, uint64_t index = 0) : gen_(MixSeed(seed, stream, index)) {}

  // Uniform in [0, 1), 53 random bits.
  double Uniform01() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n); n > 0. (Modulo bias is < n / 2^64.)
  uint64_t Below(uint64_t n) { return gen_() % n; }
  // Standard normal (Box-Muller; one value per call, the pair's twin discarded).
  double Normal();
  // Gamma(shape, scale = 1), shape > 0 (Marsaglia-Tsang; shape < 1 boosted by U^(1/shape)).
  double Gamma(double shape);
  // exp(mu + sigma * N(0,1)): median exp(mu).
  double LogNormal(double mu, double sigma);

 private:
  std::mt19937_64 gen_;
};

}  // namespace brisk::loadgen
