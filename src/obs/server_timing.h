// Per-stage latency budget of one request: named stages measured between
// contiguous timestamps (arrival -> tokenized -> first scheduled -> first
// token -> last token -> written), so the stages add up to the total by
// construction, and their rendering as a W3C Server-Timing header:
//
//   Server-Timing: tokenize;dur=0.41, queue;dur=0.02, prefill;dur=12.3,
//                  decode;dur=80.1, write;dur=0.2, total;dur=93.03
//
// (durations in milliseconds, at most 3 decimals). `brisk serve` sends it on
// a non-stream answer and in the trailer of a stream; `brisk gateway` adds
// its own stages around the upstream's (docs/metrics.md).
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brisk {

struct TimedStage {
  std::string name;
  double ms = 0;
  bool operator==(const TimedStage&) const = default;
};

// Builds stages from boundaries: stage i runs from boundaries[i] to
// boundaries[i + 1] (names.size() + 1 boundaries). A boundary earlier than
// the one before it (clocks read on different threads, an engine timestamp
// rounded) is moved up to it, so no stage is negative and the sum is exactly
// boundaries.back() - boundaries.front().
std::vector<TimedStage> StagesFromBoundaries(
    std::span<const std::string_view> names,
    std::span<const std::chrono::steady_clock::time_point> boundaries);

// Sum of the stages' ms.
double StagesTotalMs(std::span<const TimedStage> stages);

// "a;dur=1.5, b;dur=0.25": each duration rounded to microseconds, with
// trailing zeros dropped. `total_ms` >= 0 appends "total;dur=...".
std::string FormatServerTiming(std::span<const TimedStage> stages, double total_ms = -1);

// Parses a Server-Timing value (RFC-ish: comma-separated metrics, each a
// token name with optional ;param=value parameters, values may be quoted).
// Metrics without a valid dur (or with a bad name) are skipped; a malformed
// list yields what parsed before the malformed part.
std::vector<TimedStage> ParseServerTiming(std::string_view value);

// Milliseconds between two steady_clock points.
inline double MsBetween(std::chrono::steady_clock::time_point a,
                        std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace brisk
