// The process log: one logger for every diagnostic, with levels, writing one
// line per message to stderr (spdlog underneath; this header keeps spdlog out
// of every other file).
//
//   log::Info("listening on {}:{}", host, port);
//   log::Warn("accept failed: {}; retrying", ec.message());
//
// Two line formats, chosen once at startup (inference.yaml `logging:`):
//   text  2025-06-01T12:00:00.123Z info listening on 127.0.0.1:8000
//   json  {"ts":"2025-06-01T12:00:00.123Z","level":"info","msg":"listening on ..."}
// JSON lines are valid JSON for any message bytes (invalid UTF-8 becomes
// U+FFFD). Before Init() the logger writes text at level info.
//
// Thread-safe: any thread may log at any time, also while Init() runs. A line
// is written and flushed as one unit; lines of different threads never mix.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "util/status.h"

namespace brisk::log {

// Ordered: a logger at level L writes messages of level L and above.
enum class Level : int { kTrace, kDebug, kInfo, kWarn, kError, kOff };
enum class Format : int { kText, kJson };

// "trace", "debug", "info", "warn", "error", "off": the accepted level names,
// in Level order.
std::span<const std::string_view> LevelNames();
// "text", "json".
std::span<const std::string_view> FormatNames();
std::string_view LevelName(Level level);

// Exact names as above; anything else is kInvalidArgument naming the allowed
// values.
Expected<Level> ParseLevel(std::string_view name);
Expected<Format> ParseFormat(std::string_view name);

// Sets the level and the line format. Call once at startup; calling again
// (tests) replaces both.
void Init(Level level, Format format);
Level GetLevel();
Format GetFormat();
// True when a message of `level` would be written.
bool Enabled(Level level);

// Writes `message` at `level` (if enabled). Never throws.
void Write(Level level, std::string_view message);

// One line as the logger writes it (without the trailing newline): for tests
// and for anything that must look like the log.
std::string FormatLine(Format format, Level level, std::chrono::system_clock::time_point time,
                       std::string_view message);

// RFC 3339 UTC with milliseconds: "2025-06-01T12:00:00.123Z".
std::string Timestamp(std::chrono::system_clock::time_point time);

// Formats only when the level is enabled (the arguments are still evaluated).
template <typename... Args>
void Log(Level level, fmt::format_string<Args...> f, Args&&... args) {
  if (Enabled(level)) Write(level, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Trace(fmt::format_string<Args...> f, Args&&... args) {
  Log(Level::kTrace, f, std::forward<Args>(args)...);
}
template <typename... Args>
void Debug(fmt::format_string<Args...> f, Args&&... args) {
  Log(Level::kDebug, f, std::forward<Args>(args)...);
}
template <typename... Args>
void Info(fmt::format_string<Args...> f, Args&&... args) {
  Log(Level::kInfo, f, std::forward<Args>(args)...);
}
template <typename... Args>
void Warn(fmt::format_string<Args...> f, Args&&... args) {
  Log(Level::kWarn, f, std::forward<Args>(args)...);
}
template <typename... Args>
void Error(fmt::format_string<Args...> f, Args&&... args) {
  Log(Level::kError, f, std::forward<Args>(args)...);
}

}  // namespace brisk::log
