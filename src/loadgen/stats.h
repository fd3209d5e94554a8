// Serving metrics with the definitions of vLLM's benchmark_serving.py, so
// numbers from `brisk bench` and from vLLM's script can be set side by side:
//   TTFT  send -> first content-bearing chunk, per successful request
//   TPOT  (E2E - TTFT) / (output tokens - 1), per successful request with at
//         least 2 output tokens (1-token outputs have no TPOT)
//   ITL   every gap between consecutive chunks, pooled over all requests
//   E2E   send -> end of stream
// Percentiles interpolate linearly between order statistics (numpy's default).
// Throughputs divide by the measured phase's wall time. Goodput counts the
// successful requests meeting every given SLO; a 1-token output counts as
// TPOT 0 there (as in vLLM).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "loadgen/request_record.h"
#include "util/status.h"

namespace brisk::loadgen {

// numpy.percentile(values, p) with the default 'linear' method: the value at
// rank (n - 1) * p / 100, interpolated. `sorted` ascending, non-empty; p in [0, 100].
double Percentile(std::span<const double> sorted, double p);

// Summary of one latency distribution. All zero when count == 0 (vLLM reports
// 0 for an empty list too).
struct Distribution {
  int64_t count = 0;
  double mean = 0, std = 0;  // std: population (numpy's default ddof = 0)
  double min = 0, max = 0;
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0;  // p50 is the median
};
Distribution Summarize(std::vector<double> values);

// Latency objectives for goodput. Unset fields are not checked.
struct Slo {
  std::optional<double> ttft_s, tpot_s, e2e_s;
  bool empty() const { return !ttft_s && !tpot_s && !e2e_s; }
};
// "ttft=650ms,tpot=50ms,e2e=2s" (units ms, s, us; a bare number is ms).
Expected<Slo> ParseSlo(std::string_view text);
// "650ms", "0.5s", "200us", "40" (ms) -> seconds.
Expected<double> ParseDurationSeconds(std::string_view text);

// TPOT of a successful request, or nullopt when it has fewer than 2 output tokens.
std::optional<double> Tpot(const RequestRecord& r);
// Successful and within every objective in `slo`.
bool MeetsSlo(const RequestRecord& r, const Slo& slo);

struct BenchMetrics {
  double duration_s = 0;
  int64_t completed = 0;  // status kOk
  int64_t errors = 0;
  int64_t rejected = 0;  // HTTP 429
  int64_t cancelled = 0;
  int64_t total_input_tokens = 0;   // over completed requests
  int64_t total_output_tokens = 0;  // over completed requests
  double request_throughput = 0;    // completed / duration
  double output_throughput = 0;     // output tokens / duration
  double total_token_throughput = 0;
  bool has_slo = false;
  int64_t good_requests = 0;
  double goodput = 0;  // good_requests / duration (req/s)
  // In milliseconds.
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
};
BenchMetrics ComputeMetrics(std::span<const RequestRecord> records, double duration_s,
                            const Slo& slo);

}  // namespace brisk::loadgen
