#include "gateway/utc_time.h"

#include <fmt/format.h>

#include <chrono>

namespace brisk::gateway {
namespace {

using std::chrono::days;
using std::chrono::milliseconds;
using std::chrono::sys_days;
using std::chrono::year_month_day;
using Millis = std::chrono::sys_time<milliseconds>;

sys_days DayOf(int64_t t) { return std::chrono::floor<days>(Millis(milliseconds(t))); }

int64_t MsOf(sys_days d) {
  return std::chrono::duration_cast<milliseconds>(d.time_since_epoch()).count();
}

Status NotATime(std::string_view text) {
  return InvalidArgument(
      "'{}' is not a time: use a UTC date (2026-12-01), an RFC 3339 time "
      "(2026-12-01T10:00:00Z) or unix seconds",
      text);
}

// Reads exactly `n` digits at `*pos`.
bool Digits(std::string_view s, size_t* pos, size_t n, int* out) {
  if (*pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[*pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool Expect(std::string_view s, size_t* pos, char c) {
  if (*pos >= s.size() || s[*pos] != c) return false;
  ++*pos;
  return true;
}

}  // namespace

int64_t UtcDayStartMs(int64_t t) { return MsOf(DayOf(t)); }
int64_t UtcNextDayStartMs(int64_t t) { return MsOf(DayOf(t) + days(1)); }

int64_t UtcMonthStartMs(int64_t t) {
  const year_month_day ymd{DayOf(t)};
  return MsOf(sys_days{ymd.year() / ymd.month() / 1});
}

int64_t UtcNextMonthStartMs(int64_t t) {
  const year_month_day ymd{DayOf(t)};
  const std::chrono::year_month next = ymd.year() / ymd.month() + std::chrono::months(1);
  return MsOf(sys_days{next / 1});
}

std::string FormatUtcDate(int64_t t) {
  const year_month_day ymd{DayOf(t)};
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
}

std::string FormatRfc3339Ms(int64_t t) {
  const int64_t in_day = t - UtcDayStartMs(t);
  const int64_t h = in_day / 3'600'000, m = in_day / 60'000 % 60, s = in_day / 1000 % 60;
  const int64_t ms = in_day % 1000;
  if (ms == 0) return fmt::format("{}T{:02}:{:02}:{:02}Z", FormatUtcDate(t), h, m, s);
  return fmt::format("{}T{:02}:{:02}:{:02}.{:03}Z", FormatUtcDate(t), h, m, s, ms);
}

Expected<int64_t> ParseTimeMs(std::string_view text, bool* date_only) {
  if (date_only) *date_only = false;
  if (text.empty()) return NotATime(text);
  // Unix seconds, with an optional fraction.
  if (text.find('-') == std::string_view::npos) {
    int64_t seconds = 0;
    size_t i = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      if (i >= 12) return NotATime(text);  // past year 33658: a mistake (milliseconds?)
      seconds = seconds * 10 + (text[i] - '0');
    }
    if (i == 0) return NotATime(text);
    int64_t ms = 0;
    if (i < text.size()) {
      if (text[i] != '.' || i + 1 == text.size()) return NotATime(text);
      int64_t scale = 100;
      for (++i; i < text.size(); ++i) {
        if (text[i] < '0' || text[i] > '9') return NotATime(text);
        ms += (text[i] - '0') * scale;
        scale /= 10;
      }
    }
    return seconds * 1000 + ms;
  }
  size_t pos = 0;
  int y = 0, mo = 0, d = 0;
  if (!Digits(text, &pos, 4, &y) || !Expect(text, &pos, '-') || !Digits(text, &pos, 2, &mo) ||
      !Expect(text, &pos, '-') || !Digits(text, &pos, 2, &d)) {
    return NotATime(text);
  }
  const year_month_day ymd{std::chrono::year(y), std::chrono::month(static_cast<unsigned>(mo)),
                           std::chrono::day(static_cast<unsigned>(d))};
  if (!ymd.ok()) return InvalidArgument("'{}' is not a valid date", text);
  const int64_t midnight = MsOf(sys_days{ymd});
  if (pos == text.size()) {
    if (date_only) *date_only = true;
    return midnight;
  }
  const char sep = text[pos++];
  if (sep != 'T' && sep != 't' && sep != ' ') return NotATime(text);
  int h = 0, mi = 0, s = 0;
  if (!Digits(text, &pos, 2, &h) || !Expect(text, &pos, ':') || !Digits(text, &pos, 2, &mi) ||
      !Expect(text, &pos, ':') || !Digits(text, &pos, 2, &s)) {
    return NotATime(text);
  }
  if (h > 23 || mi > 59 || s > 59) return InvalidArgument("'{}' is not a valid time of day", text);
  int64_t ms = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const size_t start = pos;
    int64_t scale = 100;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      ms += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return NotATime(text);
  }
  int64_t offset_min = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos++] == '-' ? -1 : 1;
    int oh = 0, om = 0;
    if (!Digits(text, &pos, 2, &oh) || !Expect(text, &pos, ':') || !Digits(text, &pos, 2, &om) ||
        oh > 23 || om > 59) {
      return NotATime(text);
    }
    offset_min = sign * (oh * 60 + om);
  } else {
    return InvalidArgument("'{}' has no UTC offset: end it with Z or +HH:MM", text);
  }
  if (pos != text.size()) return NotATime(text);
  return midnight + ((h * 60 + mi - offset_min) * 60 + s) * int64_t{1000} + ms;
}

}  // namespace brisk::gateway
