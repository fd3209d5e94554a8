// Every series the OpenAI server exports. Names follow vLLM's (vllm:X ->
// brisk:X) so a vLLM dashboard ports by renaming the prefix;
// docs/metrics.md maps them.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "engine/engine_client.h"
#include "obs/metrics.h"
#include "server/desired_replicas.h"

namespace brisk {

class ServerMetrics {
 public:
  explicit ServerMetrics(metrics::Registry& r);

  // Gauges read from the engine's load snapshot at scrape time, and the
  // step histogram and counters fed by its step observer.
  void WatchEngine(metrics::Registry& r, EngineClient& engine);
  void ObserveStep(const StepStats& s);
  void WatchKvTiers(metrics::Registry& r, EngineClient* engine);

  metrics::Histogram *ttft, *tpot, *itl, *e2e, *queue, *prefill, *decode, *step;
  metrics::Counter *step_tokens_prefill, *step_tokens_decode, *step_time_prefill, *step_time_decode;
  metrics::Counter *prompt_tokens, *cached_tokens, *generation_tokens;
  // By outcome: ok, cancelled, rejected, timeout, error, invalid.
  std::map<std::string, metrics::Counter*> outcome;
  // Structured output (response_format): requests served with a grammar,
  // compile time (cache misses), per-token mask time, and samples that
  // ended without a complete value, by reason ("length").
  metrics::Counter* constrained_requests;
  metrics::Histogram *grammar_compile, *grammar_mask;
  std::map<std::string, metrics::Counter*> structured_output_failures;
  // Speculative decoding (vLLM's names, brisk: prefix).
  metrics::Counter *spec_drafts, *spec_draft_tokens, *spec_accepted_tokens;
  metrics::Counter *spec_eligible, *spec_draft_seconds;
  metrics::Counter *spec_draft_prompt_tokens, *spec_draft_cached_tokens;
  std::vector<metrics::Counter*> spec_accepted_per_pos;  // by draft position
  // The KV disk tier: seconds per block read and per block write.
  metrics::Histogram *kv_disk_read, *kv_disk_write;
  // brisk:desired_replicas: a backlog should be gone within this long.
  static constexpr double kTargetQueueDrainS = 10;
  // Capacity measured on the engine thread (step observer); the scrape
  // thread reads the atomic copy.
  DrainCapacity drain_capacity;
  std::atomic<double> capacity_per_s{0};
};

}  // namespace brisk
