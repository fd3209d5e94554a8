#include "loadgen/stats.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <string>

namespace brisk::loadgen {

double Percentile(std::span<const double> sorted, double p) {
  assert(!sorted.empty());
  const double rank = (static_cast<double>(sorted.size()) - 1.0) * p / 100.0;
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

Distribution Summarize(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  d.count = static_cast<int64_t>(values.size());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double ss = 0;
  for (double v : values) ss += (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(ss / n);
  d.min = values.front();
  d.max = values.back();
  d.p50 = Percentile(values, 50);
  d.p90 = Percentile(values, 90);
  d.p95 = Percentile(values, 95);
  d.p99 = Percentile(values, 99);
  return d;
}

static std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Expected<double> ParseDurationSeconds(std::string_view text) {
  text = Trim(text);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data())
    return InvalidArgument("bad duration '{}': expected a number with a unit (650ms, 2s)", text);
  std::string_view unit = Trim(text.substr(end - text.data()));
  double scale;
  if (unit.empty() || unit == "ms") {
    scale = 1e-3;
  } else if (unit == "s") {
    scale = 1.0;
  } else if (unit == "us") {
    scale = 1e-6;
  } else {
    return InvalidArgument("bad duration unit '{}' in '{}': use ms, s or us", unit, text);
  }
  if (!(value >= 0) || !std::isfinite(value))
    return InvalidArgument("bad duration '{}': must be finite and >= 0", text);
  return value * scale;
}

Expected<Slo> ParseSlo(std::string_view text) {
  Slo slo;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return InvalidArgument("bad SLO '{}': expected name=value (ttft=650ms)", item);
    std::string_view name = Trim(item.substr(0, eq));
    ASSIGN_OR_RETURN(double seconds, ParseDurationSeconds(item.substr(eq + 1)));
    if (name == "ttft") {
      slo.ttft_s = seconds;
    } else if (name == "tpot") {
      slo.tpot_s = seconds;
    } else if (name == "e2e" || name == "e2el") {
      slo.e2e_s = seconds;
    } else {
      return InvalidArgument("unknown SLO '{}': use ttft, tpot or e2e", name);
    }
  }
  return slo;
}

std::optional<double> Tpot(const RequestRecord& r) {
  if (r.status != RequestStatus::kOk || r.output_tokens < 2) return std::nullopt;
  return (r.e2e_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1);
}

bool MeetsSlo(const RequestRecord& r, const Slo& slo) {
  if (r.status != RequestStatus::kOk) return false;
  if (slo.ttft_s && r.ttft_s > *slo.ttft_s) return false;
  if (slo.e2e_s && r.e2e_s > *slo.e2e_s) return false;
  if (slo.tpot_s && Tpot(r).value_or(0.0) > *slo.tpot_s) return false;
  return true;
}

BenchMetrics ComputeMetrics(std::span<const RequestRecord> records, double duration_s,
                            const Slo& slo) {
  BenchMetrics m;
  m.duration_s = duration_s;
  m.has_slo = !slo.empty();
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestRecord& r : records) {
    switch (r.status) {
      case RequestStatus::kOk: ++m.completed; break;
      case RequestStatus::kError: ++m.errors; continue;
      case RequestStatus::kRejected: ++m.rejected; continue;
      case RequestStatus::kCancelled: ++m.cancelled; continue;
    }
    m.total_input_tokens += r.prompt_tokens;
    m.total_output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s * 1e3);
    e2e.push_back(r.e2e_s * 1e3);
    if (auto t = Tpot(r)) tpot.push_back(*t * 1e3);
    for (double gap : r.itl_s) itl.push_back(gap * 1e3);
    if (m.has_slo && MeetsSlo(r, slo)) ++m.good_requests;
  }
  if (duration_s > 0) {
    m.request_throughput = static_cast<double>(m.completed) / duration_s;
    m.output_throughput = static_cast<double>(m.total_output_tokens) / duration_s;
    m.total_token_throughput =
        static_cast<double>(m.total_input_tokens + m.total_output_tokens) / duration_s;
    m.goodput = static_cast<double>(m.good_requests) / duration_s;
  }
  m.ttft_ms = Summarize(std::move(ttft));
  m.tpot_ms = Summarize(std::move(tpot));
  m.itl_ms = Summarize(std::move(itl));
  m.e2e_ms = Summarize(std::move(e2e));
  return m;
}

}  // namespace brisk::loadgen
