// The one priority type: the scheduler orders by it, the API parses it
// ("priority" field, X-Priority header), metrics and logs name it.
#pragma once

#include <cstdint>

namespace brisk {

enum class Priority : uint8_t { kInteractive = 0, kBatch = 1 };
inline constexpr int kNumPriorities = 2;
const char* PriorityName(Priority p);  // "interactive", "batch"

}  // namespace brisk
