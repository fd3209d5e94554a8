// What a request costs: tokens by kind times their tier's prices.
//
// OpenAI's usage counts cached prompt tokens inside prompt_tokens
// (usage.prompt_tokens_details.cached_tokens), so the uncached input is
// prompt - cached. Prices are US dollars per million tokens, as providers
// quote them. Costs are kept in dollars as doubles: a row's cost is at most
// a few dollars, so the rounding of a sum of millions of rows stays far below
// a cent.
#pragma once

#include <cstdint>

#include "http/openai_answer.h"

namespace brisk::gateway {

struct Prices {
  double input_per_mtok = 0;         // uncached prompt tokens
  double cached_input_per_mtok = 0;  // prompt tokens served from the prefix cache
  double output_per_mtok = 0;        // generated tokens
  bool operator==(const Prices&) const = default;
};

using TokenCounts = http::TokenCounts;

// (prompt - cached) x input + cached x cached_input + output x output, per
// million. A cached count above prompt is clamped to prompt.
double CostUsd(const Prices& prices, const TokenCounts& tokens);

}  // namespace brisk::gateway
