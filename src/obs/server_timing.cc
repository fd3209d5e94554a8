#include "obs/server_timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace brisk {
namespace {

// RFC 7230 tchar: the characters a Server-Timing metric name may use.
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits at `sep` outside double quotes.
std::vector<std::string_view> SplitOutsideQuotes(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  bool quoted = false;
  size_t begin = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (quoted && s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      quoted = !quoted;
    } else if (!quoted && s[i] == sep) {
      out.push_back(s.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  out.push_back(s.substr(begin));
  return out;
}

std::string FormatMs(double ms) {
  if (!std::isfinite(ms) || ms < 0) ms = 0;
  std::string s = fmt::format("{:.3f}", std::round(ms * 1000) / 1000);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::vector<TimedStage> StagesFromBoundaries(
    std::span<const std::string_view> names,
    std::span<const std::chrono::steady_clock::time_point> boundaries) {
  std::vector<TimedStage> out;
  if (boundaries.size() != names.size() + 1) return out;
  auto prev = boundaries[0];
  for (size_t i = 0; i < names.size(); ++i) {
    const auto next = std::max(prev, boundaries[i + 1]);
    out.push_back({std::string(names[i]), MsBetween(prev, next)});
    prev = next;
  }
  return out;
}

double StagesTotalMs(std::span<const TimedStage> stages) {
  double sum = 0;
  for (const TimedStage& s : stages) sum += s.ms;
  return sum;
}

std::string FormatServerTiming(std::span<const TimedStage> stages, double total_ms) {
  std::string out;
  for (const TimedStage& s : stages) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{};dur={}", s.name, FormatMs(s.ms));
  }
  if (total_ms >= 0) {
    if (!out.empty()) out += ", ";
    out += "total;dur=" + FormatMs(total_ms);
  }
  return out;
}

std::vector<TimedStage> ParseServerTiming(std::string_view value) {
  std::vector<TimedStage> out;
  for (std::string_view metric : SplitOutsideQuotes(value, ',')) {
    std::vector<std::string_view> parts = SplitOutsideQuotes(metric, ';');
    const std::string_view name = Trim(parts[0]);
    if (!IsToken(name)) continue;
    bool have_dur = false;
    double dur = 0;
    for (size_t i = 1; i < parts.size(); ++i) {
      std::string_view p = Trim(parts[i]);
      const size_t eq = p.find('=');
      if (eq == std::string_view::npos) continue;
      if (Trim(p.substr(0, eq)) != "dur" || have_dur) continue;  // the first dur counts
      std::string_view v = Trim(p.substr(eq + 1));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      double d = 0;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
      if (ec == std::errc() && ptr == v.data() + v.size() && std::isfinite(d) && d >= 0) {
        dur = d;
        have_dur = true;
      }
    }
    if (have_dur) out.push_back({std::string(name), dur});
  }
  return out;
}

}  // namespace brisk
