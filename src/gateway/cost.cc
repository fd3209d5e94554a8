#include "gateway/cost.h"

#include <algorithm>

namespace brisk::gateway {

double CostUsd(const Prices& prices, const TokenCounts& tokens) {
  const int64_t cached = std::clamp<int64_t>(tokens.cached, 0, std::max<int64_t>(tokens.prompt, 0));
  const int64_t uncached = std::max<int64_t>(tokens.prompt, 0) - cached;
  const double usd =
      static_cast<double>(uncached) * prices.input_per_mtok +
      static_cast<double>(cached) * prices.cached_input_per_mtok +
      static_cast<double>(std::max<int64_t>(tokens.output, 0)) * prices.output_per_mtok;
  return usd / 1e6;
}

}  // namespace brisk::gateway
