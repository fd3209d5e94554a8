// Runs a benchmark: a warm-up phase (excluded from the results), then the
// measured phase under one load shape, all on one io_context thread.
//   open loop    requests sent at arrival times (arrivals.h), whatever the
//                server's speed; optionally at most max_inflight at once (a
//                request held back is sent when a slot frees; its latency is
//                measured from the send, as in vLLM's benchmark)
//   closed loop  `concurrency` users, each sending its next request when the
//                last one finished
// Warm-up requests run closed-loop at the same concurrency (or cap, or 1) and
// use their own workload stream, so the measured requests do not depend on them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "loadgen/client.h"
#include "loadgen/request_record.h"
#include "loadgen/stats.h"
#include "loadgen/workload.h"
#include "util/status.h"

namespace brisk::loadgen {

struct LoadSpec {
  int64_t num_requests = 100;
  int64_t warmup = 0;
  double request_rate = std::numeric_limits<double>::infinity();  // open loop, req/s
  double burstiness = 1.0;   // gamma shape of inter-arrival gaps; 1 = Poisson
  int64_t concurrency = 0;   // > 0: closed loop with this many users (rate unused)
  int64_t max_inflight = 0;  // open loop: cap on requests in flight; 0 = none
};

struct BenchConfig {
  ClientOptions client;
  WorkloadSpec workload;  // workload.seed also seeds the arrival times
  LoadSpec load;
  Slo slo;
  std::string label;
  bool progress = true;  // live progress line on stderr
};

struct BenchResult {
  BenchConfig config;  // with the model name resolved
  std::string workload_source;
  int64_t corpus_passages = 0;
  std::string started_at;              // UTC, ISO 8601
  bool interrupted = false;            // SIGINT/SIGTERM: unfinished requests are kCancelled
  std::vector<RequestRecord> records;  // the measured phase, by index
  int64_t warmup_failures = 0;
  BenchMetrics metrics;
};

Status ValidateLoadSpec(const LoadSpec& load);

// Resolves the model (GET /v1/models) when none is given, runs both phases
// and computes the metrics. An error only when nothing could be measured
// (bad config, no server); failed requests are results, not errors.
Expected<BenchResult> RunBench(BenchConfig config);

}  // namespace brisk::loadgen
