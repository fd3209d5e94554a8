// Reporting request keys skipped under `server.unknown_request_fields:
// ignore` (docs/config.md): a response header that lists them and a
// Prometheus counter by name. Both take client text, so both are bounded.
#pragma once

#include <cstddef>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "obs/metrics.h"

namespace brisk {

inline constexpr std::string_view kIgnoredFieldsHeader = "x-brisk-ignored-fields";
// Distinct names that get a series of their own; the rest count as "other".
inline constexpr size_t kMaxIgnoredFieldSeries = 64;
// The header value stops before this many bytes (then ends in "...").
inline constexpr size_t kMaxIgnoredFieldsHeaderBytes = 1024;

// The header value: names comma-separated, every byte other than
// [A-Za-z0-9_.-] percent-encoded (so no comma, space or control byte of a
// name reaches the header), at most kMaxIgnoredFieldsHeaderBytes; names that
// do not fit are replaced by one "...". "" for no names.
std::string IgnoredFieldsHeaderValue(std::span<const std::string> names);

// brisk:ignored_request_fields_total{field}. A name made only of
// [A-Za-z0-9_.-] (1..67 bytes: a cut name ends in "...") is its own label
// value while fewer than kMaxIgnoredFieldSeries names have one; every other
// name counts as "other". Series are created on first use. Thread-safe.
class IgnoredFieldCounter {
 public:
  explicit IgnoredFieldCounter(metrics::Registry& registry) : registry_(registry) {}
  void Count(std::span<const std::string> names);
  // Distinct names with a series of their own so far.
  size_t named_series() const;

 private:
  metrics::Counter* CounterFor(const std::string& name);  // requires mu_

  metrics::Registry& registry_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, metrics::Counter*> by_name_;
  metrics::Counter* other_ = nullptr;
};

}  // namespace brisk
