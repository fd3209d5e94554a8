// One engine step: the scheduler (engine/scheduler.h) decides who runs,
// shared KV blocks about to be written are copied, one forward pass runs over
// the flat batch, and the output processor (engine/output_processor.h)
// samples, detokenizes, applies stops and forks, and reports what each
// request produced:
//
//   schedule -> forward -> process outputs -> update scheduler
//
// With speculative decoding on (EngineOptions::speculative), the speculator
// proposes drafts before the schedule, draft positions join their decode
// chunks in the forward pass, and the output processor verifies them.
//
// Single-threaded: one thread calls Add(), Cancel() and Step() (the engine
// thread, engine/engine_loop.h). A cancelled request leaves at the start of
// the next step, so its KV blocks are free within one step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "engine/kv_block_pool.h"
#include "engine/kv_disk_tier.h"
#include "engine/output_processor.h"
#include "engine/scheduler.h"
#include "engine/speculator.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

struct EngineOptions {
  int n_threads = 2;
  // Batching, block size, prefix cache, priorities, queue bounds
  // (sliding_window is set from the model).
  SchedulerOptions scheduler;
  int64_t kv_budget_bytes = 512ll << 20;
  KvType kv_type = KvType::kF16;   // cache.kv_precision
  int64_t max_context_tokens = 0;  // 0 = the model's context length
  bool prefault_kv = false;        // commit the KV pool's memory at construction
  // Sliding-window models: blocks the window has left give their local
  // layers' KV back to the pool (kv_block_pool.h). Off: every layer keeps
  // every block (what the window freeing is checked against).
  bool window_paging = true;
  SpeculativeOptions speculative;  // off by default (method none)
  // Structured output: compute a step's grammar token masks on their own
  // thread while the forward pass runs. Auto: where the machine has more
  // cores than the forward pass's threads (else the two would only take
  // turns on the same cores).
  enum class MaskOverlap : uint8_t { kAuto, kOn, kOff } mask_overlap = MaskOverlap::kAuto;
  // KV events (engine/kv_events.h): the prefix cache's changes recorded for
  // Engine::TakeKvEvents, hashed as vLLM's sha256_cbor with this seed.
  bool kv_events = false;
  std::string kv_events_hash_seed = "0";
  // The disk tier under the prefix cache (engine/kv_disk_tier.h): off while
  // kv_disk.dir is empty. kv_disk.serving_key names what the caller knows
  // changes KV contents (model file, precisions, RoPE, engine version); the
  // engine adds the KV layout. A directory that cannot be opened leaves the
  // engine on RAM only (logged; kv_disk_stats().writes_disabled).
  KvDiskStoreOptions kv_disk;
};

class Engine {
 public:
  Engine(Model& model, const Tokenizer& tokenizer, const EngineOptions& options);
  ~Engine();

  // Validates and queues a request under the caller's id (unique, > 0).
  // Errors: empty prompt, prompt + max_tokens over the context, bad sampling
  // params, too many stop strings (InvalidArgument/OutOfRange); waiting queue
  // full (ResourceExhausted).
  Status Add(int64_t request_id, GenerationRequest request);
  // The same with an id the engine picks; returns it.
  Expected<int64_t> Add(GenerationRequest request);
  // The checks Add() makes that do not depend on the engine's state; safe to
  // call from any thread.
  Status Validate(const GenerationRequest& request) const;
  // Ends the request at the start of the next step (kCancelled outputs).
  void Cancel(int64_t request_id);
  bool HasWork() const { return scheduler_.HasWork() || !cancels_.empty(); }
  // One iteration; appends what each sample produced to *outputs.
  Status Step(std::vector<SequenceOutput>* outputs);

  const KvBlockPool& block_pool() const { return pool_; }
  const Scheduler& scheduler() const { return scheduler_; }
  const KvCache& kv_cache() const { return kv_; }
  const StepStats& last_step() const { return last_step_; }
  // KV events since the last call (none unless EngineOptions::kv_events);
  // the first call after construction starts with AllBlocksCleared.
  std::vector<KvEvent> TakeKvEvents();
  // Null unless EngineOptions::kv_events.
  const KvEventLog* kv_event_log() const { return kv_events_.get(); }
  // The disk tier's counters (all zero without one).
  KvDiskStats kv_disk_stats() const;
  // Blocks until the disk tier has written what it was handed (no-op
  // without one).
  void FlushKvDisk();
  const Speculator& speculator() const { return speculator_; }
  ThreadPool& threads() { return threads_; }
  Model& model() { return model_; }
  int64_t context_limit() const { return context_limit_; }
  int32_t vocab_size() const { return model_.config().vocab; }
  // Sequences preempted (KV blocks taken back, recomputed later) so far.
  int64_t num_preemptions() const { return scheduler_.stats().preemptions; }
  double Now() const;  // seconds on the engine's clock

 private:
  void OpenKvDisk(KvDiskStoreOptions options);
  void ApplyCancels(std::vector<SequenceOutput>* outputs);
  // Finished sequences give their blocks back and leave the speculator.
  void ReleaseFinished();
  Status RunForward(const SchedulerOutput& so);
  std::span<const int32_t> LocalTables(const SeqState& st, std::vector<int32_t>* tables);

  Model& model_;
  EngineOptions opts_;
  int64_t context_limit_;
  ThreadPool threads_;
  KvCache kv_;
  KvBlockPool pool_;
  // Before the scheduler: its prefix cache tells the log when it clears on
  // destruction.
  std::unique_ptr<ExternalBlockHasher> external_hasher_;
  std::unique_ptr<KvEventLog> kv_events_;
  // Before the scheduler, whose prefix cache hands it evicted blocks.
  std::unique_ptr<KvDiskTier> kv_disk_;
  bool kv_disk_failed_ = false;  // configured, but the directory could not be opened
  Scheduler scheduler_;
  OutputProcessor outputs_;
  Speculator speculator_;
  Clock::time_point t0_;
  int64_t next_seq_id_ = 1;
  int64_t next_request_id_ = 1;
  std::vector<int64_t> cancels_;
  Batch batch_;
  std::vector<float> logits_;
  std::vector<uint8_t> all_rows_;      // per scheduled chunk: every position's logits (echo)
  std::vector<int32_t> draft_tokens_;  // a drafted decode's positions (scratch)
  // Per scheduled chunk: its sequence's local block tables (window paging).
  std::vector<std::vector<int32_t>> local_tables_;
  std::vector<SeqResult> results_;
  StepStats last_step_;
};

}  // namespace brisk
