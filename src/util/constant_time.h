// Comparing secrets (API keys, the admin key) without telling a guesser, by
// how long a refusal takes, how much of the secret they got right.
#pragma once

#include <string_view>

namespace brisk {

// a == b, comparing every byte up to the longer length whatever the first
// difference: the time taken depends only on the lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace brisk
