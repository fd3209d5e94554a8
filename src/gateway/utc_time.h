// UTC calendar arithmetic for the ledger's reports and budgets: day and
// month boundaries, RFC 3339 text. Times are unix milliseconds, the ledger's
// unit. No time zones: budgets and rollups are by UTC day and month.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace brisk::gateway {

inline constexpr int64_t kMsPerDay = 86'400'000;

// Start of the UTC day / month that contains `t`, and the start of the next.
int64_t UtcDayStartMs(int64_t t);
int64_t UtcNextDayStartMs(int64_t t);
int64_t UtcMonthStartMs(int64_t t);
int64_t UtcNextMonthStartMs(int64_t t);

// "2026-12-01T10:00:00Z", with ".123" before the Z when the milliseconds are
// not zero.
std::string FormatRfc3339Ms(int64_t t);
// "2026-12-01".
std::string FormatUtcDate(int64_t t);

// A point in time as users write it:
//   "2026-12-01"                      a UTC date (its midnight)
//   "2026-12-01T10:00:00Z", "2026-12-01T10:00:00.250+02:00", "2026-12-01 10:00:00Z"
//                                     RFC 3339 (the 'T' may be a space; offset required)
//   "1764547200"                      unix seconds
// `*date_only` (optional) tells whether it was a bare date. Anything else is
// kInvalidArgument naming the accepted forms.
Expected<int64_t> ParseTimeMs(std::string_view text, bool* date_only = nullptr);

}  // namespace brisk::gateway
