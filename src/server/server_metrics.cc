#include "server/server_metrics.h"

#include <chrono>
#include <string>
#include <vector>

namespace brisk {

ServerMetrics::ServerMetrics(metrics::Registry& r) {
  const auto lat = metrics::LatencyBucketsSeconds();
  const auto tok = metrics::TokenLatencyBucketsSeconds();
  ttft = r.GetHistogram("brisk:time_to_first_token_seconds",
                        "Time to first token: arrival to the first generated token.", lat);
  tpot = r.GetHistogram("brisk:time_per_output_token_seconds",
                        "Per request: (e2e - ttft) / (generated tokens - 1).", tok);
  itl = r.GetHistogram("brisk:inter_token_latency_seconds",
                       "Time between consecutive token outputs of a sample.", tok);
  e2e = r.GetHistogram("brisk:e2e_request_latency_seconds",
                       "Arrival to the last token (finished requests).", lat);
  queue = r.GetHistogram("brisk:request_queue_time_seconds",
                         "Arrival to first scheduled by the engine.", lat);
  prefill =
      r.GetHistogram("brisk:request_prefill_time_seconds", "First scheduled to first token.", lat);
  decode = r.GetHistogram("brisk:request_decode_time_seconds", "First token to last token.", lat);
  step = r.GetHistogram("brisk:engine_step_seconds", "Duration of one engine forward step.", tok);
  step_tokens_prefill = r.GetCounter("brisk:scheduled_prefill_tokens_total",
                                     "Prompt tokens computed by engine steps.");
  step_tokens_decode = r.GetCounter("brisk:scheduled_decode_tokens_total",
                                    "Decode tokens computed by engine steps.");
  step_time_prefill = r.GetCounter("brisk:engine_step_prefill_seconds_total",
                                   "Step time attributed to prefill tokens (by token share).");
  step_time_decode = r.GetCounter("brisk:engine_step_decode_seconds_total",
                                  "Step time attributed to decode tokens (by token share).");
  prompt_tokens = r.GetCounter("brisk:prompt_tokens_total", "Prompt tokens of finished requests.");
  cached_tokens = r.GetCounter("brisk:prompt_tokens_cached_total",
                               "Prompt tokens served from the prefix cache.");
  generation_tokens =
      r.GetCounter("brisk:generation_tokens_total", "Generated tokens of finished requests.");
  for (const char* o : {"ok", "cancelled", "rejected", "timeout", "error", "invalid"})
    outcome[o] = r.GetCounter("brisk:requests_total",
                              "Requests by outcome: ok, cancelled (client went away), rejected "
                              "(429), timeout (deadline), error (5xx), invalid (4xx).",
                              {{"outcome", o}});
  constrained_requests = r.GetCounter("brisk:constrained_requests_total",
                                      "Requests served with a response_format grammar.");
  static const std::vector<double> kCompileBuckets = {1e-4, 2.5e-4, 5e-4,   1e-3, 2.5e-3,
                                                      5e-3, 1e-2,   2.5e-2, 0.1,  1};
  static const std::vector<double> kMaskBuckets = {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
                                                   1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1};
  grammar_compile =
      r.GetHistogram("brisk:grammar_compile_seconds",
                     "Time to compile a response_format schema (cache misses).", kCompileBuckets);
  grammar_mask = r.GetHistogram("brisk:grammar_mask_seconds",
                                "Time to compute one allowed-token mask of a constrained sample.",
                                kMaskBuckets);
  for (const char* reason : {"length"})
    structured_output_failures[reason] =
        r.GetCounter("brisk:structured_output_failures_total",
                     "Constrained requests that ended without a complete value, by reason "
                     "(length: max_tokens or the context ran out mid-value).",
                     {{"reason", reason}});
  spec_drafts = r.GetCounter("brisk:spec_decode_num_drafts_total",
                             "Speculative decoding: drafts verified (one per sequence and step).");
  spec_draft_tokens = r.GetCounter("brisk:spec_decode_num_draft_tokens_total",
                                   "Speculative decoding: draft tokens verified.");
  spec_accepted_tokens = r.GetCounter("brisk:spec_decode_num_accepted_tokens_total",
                                      "Speculative decoding: draft tokens accepted.");
  spec_eligible = r.GetCounter(
      "brisk:spec_decode_eligible_total",
      "Speculative decoding: decode steps of speculating sequences (one per sequence and step), "
      "drafted or not; num_drafts / this is the share of steps with a draft.");
  spec_draft_seconds = r.GetCounter("brisk:spec_decode_draft_seconds_total",
                                    "Speculative decoding: time the draft model ran.");
  spec_draft_prompt_tokens = r.GetCounter(
      "brisk:spec_decode_draft_prompt_tokens_total",
      "Speculative decoding: prompt tokens the draft model read before drafting (its catch-up, "
      "during the target's prefill or after it).");
  spec_draft_cached_tokens = r.GetCounter(
      "brisk:spec_decode_draft_cached_prompt_tokens_total",
      "Speculative decoding: prompt tokens the draft model found in its prefix cache instead.");
  static const std::vector<double> kDiskBuckets = {2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3,
                                                   2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1,  1};
  kv_disk_read = r.GetHistogram(
      "brisk:kv_disk_read_seconds",
      "KV disk tier: time to read and check one block (on the engine thread, at admission).",
      kDiskBuckets);
  kv_disk_write = r.GetHistogram(
      "brisk:kv_disk_write_seconds",
      "KV disk tier: time to write one block (on the tier's writer thread).", kDiskBuckets);
  for (int pos = 0; pos < 16; ++pos)
    spec_accepted_per_pos.push_back(
        r.GetCounter("brisk:spec_decode_num_accepted_tokens_per_pos_total",
                     "Speculative decoding: drafts whose token at this position was accepted.",
                     {{"position", std::to_string(pos)}}));
}

void ServerMetrics::ObserveStep(const StepStats& s) {
  for (double m : s.grammar_mask_s) grammar_mask->Observe(m);
  for (double t : s.kv_disk_read_s) kv_disk_read->Observe(t);
  for (double t : s.kv_disk_write_s) kv_disk_write->Observe(t);
  if (s.spec_eligible > 0) spec_eligible->Inc(s.spec_eligible);
  if (s.spec_draft_s > 0) spec_draft_seconds->Inc(s.spec_draft_s);
  if (s.spec_draft_prompt_tokens > 0)
    spec_draft_prompt_tokens->Inc(static_cast<double>(s.spec_draft_prompt_tokens));
  if (s.spec_draft_cached_tokens > 0)
    spec_draft_cached_tokens->Inc(static_cast<double>(s.spec_draft_cached_tokens));
  if (s.spec_drafts > 0) {
    spec_drafts->Inc(s.spec_drafts);
    spec_draft_tokens->Inc(s.spec_draft_tokens);
    spec_accepted_tokens->Inc(s.spec_accepted_tokens);
    for (size_t i = 0; i < s.spec_accepted_per_pos.size() && i < spec_accepted_per_pos.size(); ++i)
      spec_accepted_per_pos[i]->Inc(s.spec_accepted_per_pos[i]);
  }
  if (s.sequences == 0) return;
  step->Observe(s.forward_s);
  step_tokens_prefill->Inc(s.prefill_tokens);
  step_tokens_decode->Inc(s.decode_tokens);
  const double total = s.prefill_tokens + s.decode_tokens;
  if (total > 0) {
    step_time_prefill->Inc(s.forward_s * s.prefill_tokens / total);
    step_time_decode->Inc(s.forward_s * s.decode_tokens / total);
  }
}

// The prefix cache's tiers: RAM (the KV pool's cached blocks) and disk
// (engine/kv_disk_tier.h; zeros without cache.disk_path).
void ServerMetrics::WatchKvTiers(metrics::Registry& r, EngineClient* e) {
  for (const char* tier : {"ram", "disk"}) {
    const bool ram = tier == std::string_view("ram");
    const metrics::Labels l = {{"tier", tier}};
    r.AddCallbackGauge("brisk:prefix_cache_tier_hit_tokens_total",
                       "Prompt tokens found cached at a request's first admission, by tier.", l,
                       [e, ram] {
                         const auto s = e->Load().scheduler;
                         return double(ram ? s.prefix_ram_hit_tokens : s.prefix_disk_hit_tokens);
                       });
    r.AddCallbackGauge("brisk:prefix_cache_tier_hit_blocks_total",
                       "KV blocks reused instead of recomputed at admission, by tier.", l,
                       [e, ram] {
                         const auto s = e->Load().scheduler;
                         return double(ram ? s.prefix_ram_hit_blocks : s.prefix_disk_hit_blocks);
                       });
    r.AddCallbackGauge(
        "brisk:prefix_cache_tier_hit_bytes_total",
        "KV bytes reused instead of recomputed, by tier (disk: bytes read; ram: blocks times a "
        "block's bytes, an upper bound for sliding-window models).",
        l, [e, ram] {
          const EngineLoad load = e->Load();
          return ram ? double(load.scheduler.prefix_ram_hit_blocks) *
                           double(load.kv_bytes_per_block)
                     : double(load.kv_disk.bytes_read);
        });
    r.AddCallbackGauge(
        "brisk:kv_tier_bytes",
        "KV bytes each tier holds for reuse (ram: cached blocks times a block's bytes, an upper "
        "bound for sliding-window models; disk: entry files).",
        l, [e, ram] {
          const EngineLoad load = e->Load();
          return ram ? double(load.scheduler.blocks_cached) * double(load.kv_bytes_per_block)
                     : double(load.kv_disk.bytes_used);
        });
  }
  struct DiskSeries {
    const char* name;
    const char* help;
    int64_t KvDiskStats::*field;
  };
  static const DiskSeries kDisk[] = {
      {"brisk:kv_disk_blocks", "KV disk tier: blocks on disk.", &KvDiskStats::entries},
      {"brisk:kv_disk_reads_total", "KV disk tier: blocks read back.", &KvDiskStats::reads},
      {"brisk:kv_disk_read_bytes_total", "KV disk tier: payload bytes read back.",
       &KvDiskStats::bytes_read},
      {"brisk:kv_disk_writes_total", "KV disk tier: blocks written.", &KvDiskStats::writes},
      {"brisk:kv_disk_written_bytes_total", "KV disk tier: bytes written (files).",
       &KvDiskStats::bytes_written},
      {"brisk:kv_disk_writes_dropped_total",
       "KV disk tier: evicted blocks not written (the write queue was full, or writes are off).",
       &KvDiskStats::writes_dropped},
      {"brisk:kv_disk_corrupt_total",
       "KV disk tier: entries found truncated or corrupt (skipped, deleted, recomputed).",
       &KvDiskStats::corrupt},
      {"brisk:kv_disk_evictions_total",
       "KV disk tier: entries deleted to stay within cache.disk_bytes.", &KvDiskStats::evictions},
  };
  for (const DiskSeries& d : kDisk)
    r.AddCallbackGauge(d.name, d.help, {},
                       [e, f = d.field] { return double(e->Load().kv_disk.*f); });
  r.AddCallbackGauge("brisk:kv_disk_tier_disabled",
                     "1 when cache.disk_path is set but the disk tier stopped writing (a full, "
                     "read-only or unusable disk): RAM prefix cache only.",
                     {}, [e] { return e->Load().kv_disk.writes_disabled ? 1.0 : 0.0; });
}

void ServerMetrics::WatchEngine(metrics::Registry& r, EngineClient& engine) {
  EngineClient* e = &engine;
  engine.SetStepObserver([this, e](const StepStats& s) {
    ObserveStep(s);
    // Called after the step, outside the engine's lock, so Load() is safe.
    const EngineLoad l = e->Load();
    const double now =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    int64_t waiting = 0;
    for (int p = 0; p < kNumPriorities; ++p) waiting += l.scheduler.waiting[p];
    int64_t running = 0;
    for (int p = 0; p < kNumPriorities; ++p) running += l.scheduler.running[p];
    drain_capacity.Observe(now, l.finished_per_s, running, waiting);
    capacity_per_s.store(drain_capacity.capacity_per_s(), std::memory_order_relaxed);
  });
  for (int p = 0; p < kNumPriorities; ++p) {
    const metrics::Labels l = {{"priority", PriorityName(static_cast<Priority>(p))}};
    r.AddCallbackGauge("brisk:num_requests_running", "Sequences running in the engine.", l,
                       [e, p] { return e->Load().scheduler.running[p]; });
    r.AddCallbackGauge("brisk:num_requests_waiting",
                       "Sequences admitted and waiting to be scheduled.", l,
                       [e, p] { return e->Load().queued[p]; });
  }
  r.AddCallbackGauge("brisk:kv_cache_usage_perc", "KV cache blocks in use (0..1).", {}, [e] {
    auto s = e->Load().scheduler;
    return s.blocks_total ? double(s.blocks_used) / s.blocks_total : 0;
  });
  for (const char* state : {"used", "free", "cached"}) {
    std::string st = state;
    r.AddCallbackGauge("brisk:kv_cache_blocks", "KV cache blocks by state.", {{"state", state}},
                       [e, st] {
                         auto s = e->Load().scheduler;
                         if (st == "used") return double(s.blocks_used);
                         if (st == "free") return double(s.blocks_total - s.blocks_used);
                         return double(s.blocks_cached);
                       });
  }
  r.AddCallbackGauge("brisk:num_preemptions_total",
                     "Sequences preempted (KV blocks taken back, recomputed).", {},
                     [e] { return double(e->Load().scheduler.preemptions); });
  r.AddCallbackGauge("brisk:prefix_cache_queries_total",
                     "Prompt tokens looked up in the prefix cache.", {},
                     [e] { return double(e->Load().scheduler.prefix_query_tokens); });
  r.AddCallbackGauge("brisk:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
                     {}, [e] { return double(e->Load().scheduler.prefix_hit_tokens); });
  WatchKvTiers(r, e);
  r.AddCallbackGauge("brisk:kv_cache_waste_ratio",
                     "Allocated KV token slots not holding a token, mean over steps.", {},
                     [e] { return e->Load().scheduler.kv_waste_ratio; });
  r.AddCallbackGauge("brisk:request_drain_rate", "Requests finished per second over the last 30 s.",
                     {}, [e] { return e->Load().finished_per_s; });
  // The completion rate stands for the arrival rate: below capacity they are
  // equal, and above it the excess piles up in the queue, which the formula
  // counts on its own (desired_replicas.h).
  r.AddCallbackGauge(
      "brisk:desired_replicas",
      "Replicas this process's load needs (a fraction; sum over a pool, then ceil): "
      "(drain rate + waiting / 10 s) / drain rate measured at saturation (docs/metrics.md).",
      {}, [this, e] {
        const EngineLoad l = e->Load();
        double queued = 0;
        for (int p = 0; p < kNumPriorities; ++p) queued += l.queued[p];
        return DesiredReplicas(l.finished_per_s, queued, kTargetQueueDrainS,
                               capacity_per_s.load(std::memory_order_relaxed));
      });
}

}  // namespace brisk
