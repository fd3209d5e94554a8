// The engine loop: each Step() asks the scheduler (engine/scheduler.h) who
// runs, copies shared KV blocks that are about to be written, runs one
// forward pass over the flat batch, samples, detokenizes, checks stop
// conditions and reports what each request produced.
//
// Only one thread calls Add() and Step(); Cancel() may be called from any
// thread (the request is queued and applied at the start of the next step,
// so its KV blocks are free within one step).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/kv_block_pool.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "engine/stop_matcher.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/llama_model.h"
#include "model/tokenizer.h"
#include "model/tokenizer_incremental.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

using Clock = std::chrono::steady_clock;

struct EngineOptions {
  int n_threads = 2;
  int block_size = 16;
  int64_t kv_budget_bytes = 512ll << 20;
  int max_batch_tokens = 512;  // tokens per forward step
  int max_concurrent_sequences = 64;
  int prefill_chunk_tokens = 0;  // 0 = max_batch_tokens
  bool continuous_batching = true;
  bool prefix_cache = true;
  double aging_s = 5;
  int max_waiting[kNumPriorities] = {256, 1024};
  int64_t max_context_tokens = 0;  // 0 = the model's context length
  bool prefault_kv = false;        // commit the KV pool's memory at construction
};

enum class FinishReason { kNone, kStop, kLength, kCancelled, kDeadline, kError };
const char* FinishReasonName(FinishReason r);  // "stop", "length", "cancelled", "deadline", "error"

struct GenerationRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int max_tokens = 256;
  int n = 1;                            // samples; they share the prompt's KV blocks
  std::vector<std::string> stop;        // stop strings
  std::vector<int32_t> stop_token_ids;  // extra tokens that end generation (not emitted)
  bool ignore_eos = false;
  Priority priority = Priority::kInteractive;
  std::optional<Clock::time_point> arrival;   // default: when Add() is called
  std::optional<Clock::time_point> deadline;  // generation ends with kDeadline after it
  std::string cache_salt;                     // prefix-cache isolation (tenant)
};

// Produced per request sample and step. Usage and timings are set when
// finished.
struct SequenceOutput {
  int64_t seq_id = 0;  // the request id Add() returned
  int index = 0;       // which of the request's n samples
  std::vector<int32_t> new_tokens;
  std::string text;  // text completed this step (never half a UTF-8 char)
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;      // prompt tokens served from the prefix cache
  int32_t completion_tokens = 0;  // of this sample
  double queue_s = -1;            // arrival -> first scheduled
};

// Per-step numbers for metrics.
struct StepStats {
  double forward_s = 0;
  int32_t prefill_tokens = 0;
  int32_t decode_tokens = 0;
  int32_t sequences = 0;
};

class Engine {
 public:
  Engine(LlamaModel& model, const Tokenizer& tokenizer, const EngineOptions& options);
  ~Engine();

  // Validates and queues a request; returns its id. Errors: empty prompt,
  // prompt + max_tokens over the context, bad sampling params, too many stop
  // strings (InvalidArgument/OutOfRange); waiting queue full
  // (ResourceExhausted).
  Expected<int64_t> Add(GenerationRequest request);
  // The checks Add() makes that do not depend on the engine's state; safe to
  // call from any thread.
  Status Validate(const GenerationRequest& request) const;
  void Cancel(int64_t request_id);
  bool HasWork() const { return scheduler_.HasWork(); }
  // One iteration; appends what each sequence produced to *outputs.
  Status Step(std::vector<SequenceOutput>* outputs);

  const KvBlockPool& block_pool() const { return pool_; }
  const Scheduler& scheduler() const { return scheduler_; }
  const KvCache& kv_cache() const { return kv_; }
  const StepStats& last_step() const { return last_step_; }
  ThreadPool& threads() { return threads_; }
  LlamaModel& model() { return model_; }
  int64_t context_limit() const { return context_limit_; }
  // Sequences preempted (KV blocks taken back, recomputed later) so far.
  int64_t num_preemptions() const { return scheduler_.stats().preemptions; }
  double Now() const;  // seconds on the engine's clock

 private:
  struct Sequence;
  void Finish(Sequence& s, FinishReason reason, SequenceOutput* out);
  SequenceOutput NewOutput(const Sequence& s) const;
  void FinishUnforked(Sequence& s, FinishReason reason, std::vector<SequenceOutput>* outputs);
  // Samples for one sequence; fills its output and result.
  void SampleInto(Sequence& s, std::span<float> logits, const std::vector<int32_t>& history,
                  SequenceOutput* out, SeqResult* result);

  LlamaModel& model_;
  const Tokenizer& tokenizer_;
  EngineOptions opts_;
  int64_t context_limit_;
  ThreadPool threads_;
  KvCache kv_;
  KvBlockPool pool_;
  Scheduler scheduler_;
  Clock::time_point t0_;
  std::unordered_map<int64_t, std::unique_ptr<Sequence>> seqs_;  // by sequence id
  std::unordered_map<int64_t, std::vector<int64_t>> request_seqs_;
  int64_t next_id_ = 1;
  std::mutex cancel_mu_;  // guards cancel_requests_ (Cancel may run on any thread)
  std::vector<int64_t> cancel_requests_;
  Batch batch_;
  std::vector<float> logits_;
  std::vector<float> fork_logits_;
  StepStats last_step_;
};

}  // namespace brisk
