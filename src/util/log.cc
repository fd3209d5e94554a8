#include "util/log.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/formatter.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

namespace brisk::log {
namespace {

constexpr std::string_view kLevelNames[] = {"trace", "debug", "info", "warn", "error", "off"};
constexpr std::string_view kFormatNames[] = {"text", "json"};

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<int> g_format{static_cast<int>(Format::kText)};

spdlog::level::level_enum ToSpdlog(Level level) {
  switch (level) {
    case Level::kTrace: return spdlog::level::trace;
    case Level::kDebug: return spdlog::level::debug;
    case Level::kInfo: return spdlog::level::info;
    case Level::kWarn: return spdlog::level::warn;
    case Level::kError: return spdlog::level::err;
    case Level::kOff: return spdlog::level::off;
  }
  return spdlog::level::info;
}

Level FromSpdlog(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return Level::kTrace;
    case spdlog::level::debug: return Level::kDebug;
    case spdlog::level::info: return Level::kInfo;
    case spdlog::level::warn: return Level::kWarn;
    case spdlog::level::err:
    case spdlog::level::critical: return Level::kError;
    default: return Level::kOff;
  }
}

// Renders every line through FormatLine, so the logger and the tests agree
// on the format byte for byte.
class LineFormatter final : public spdlog::formatter {
 public:
  explicit LineFormatter(Format format) : format_(format) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line = FormatLine(format_, FromSpdlog(msg.level), msg.time,
                                  std::string_view(msg.payload.data(), msg.payload.size()));
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<LineFormatter>(format_);
  }

 private:
  Format format_;
};

// One logger for the life of the process, never destroyed: threads that are
// still running during static destruction (a detached waiter, an IO thread)
// may log safely. Reconfigured in place by Init(), so no caller ever holds a
// stale logger. The stderr sink writes and flushes each line under a lock.
spdlog::logger& Logger() {
  static spdlog::logger* const logger = [] {
    auto* l = new spdlog::logger("brisk", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_formatter(std::make_unique<LineFormatter>(Format::kText));
    l->set_level(ToSpdlog(Level::kInfo));
    return l;
  }();
  return *logger;
}

}  // namespace

std::span<const std::string_view> LevelNames() { return kLevelNames; }
std::span<const std::string_view> FormatNames() { return kFormatNames; }

std::string_view LevelName(Level level) {
  int i = static_cast<int>(level);
  return i >= 0 && i < static_cast<int>(std::size(kLevelNames)) ? kLevelNames[i] : "?";
}

Expected<Level> ParseLevel(std::string_view name) {
  for (size_t i = 0; i < std::size(kLevelNames); ++i) {
    if (kLevelNames[i] == name) return static_cast<Level>(i);
  }
  return InvalidArgument("log level '{}' is not one of {}", name,
                         fmt::join(std::begin(kLevelNames), std::end(kLevelNames), ", "));
}

Expected<Format> ParseFormat(std::string_view name) {
  for (size_t i = 0; i < std::size(kFormatNames); ++i) {
    if (kFormatNames[i] == name) return static_cast<Format>(i);
  }
  return InvalidArgument("log format '{}' is not one of {}", name,
                         fmt::join(std::begin(kFormatNames), std::end(kFormatNames), ", "));
}

void Init(Level level, Format format) {
  spdlog::logger& logger = Logger();
  logger.set_formatter(std::make_unique<LineFormatter>(format));
  logger.set_level(ToSpdlog(level));
  g_format.store(static_cast<int>(format), std::memory_order_relaxed);
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

Level GetLevel() { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }
Format GetFormat() { return static_cast<Format>(g_format.load(std::memory_order_relaxed)); }

bool Enabled(Level level) {
  return level != Level::kOff && static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void Write(Level level, std::string_view message) {
  if (!Enabled(level)) return;
  // spdlog reports its own failures through its error handler; this guards
  // the allocations around it, so that logging never throws into a caller.
  try {
    Logger().log(ToSpdlog(level), spdlog::string_view_t(message.data(), message.size()));
  } catch (...) {
  }
}

std::string FormatLine(Format format, Level level, std::chrono::system_clock::time_point time,
                       std::string_view message) {
  std::string ts = Timestamp(time);
  if (format == Format::kText) {
    return fmt::format("{} {:<5} {}", ts, LevelName(level), message);
  }
  nlohmann::ordered_json j;
  j["ts"] = std::move(ts);
  j["level"] = LevelName(level);
  j["msg"] = message;
  // `replace` turns invalid UTF-8 into U+FFFD instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Timestamp(std::chrono::system_clock::time_point time) {
  using namespace std::chrono;
  const int64_t ms = duration_cast<milliseconds>(time.time_since_epoch()).count();
  // Floor division, so that times before 1970 still print a valid date.
  int64_t secs = ms / 1000;
  int64_t frac = ms % 1000;
  if (frac < 0) {
    frac += 1000;
    secs -= 1;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

}  // namespace brisk::log
