// The engine loop: sequences join and leave at every step. One Step() builds
// a flat batch (decode tokens of running sequences first, then prefill
// chunks under the token budget), allocates KV blocks, runs the forward
// pass, samples, detokenizes and checks stop conditions.
//
// Only one thread calls Add() and Step(); Cancel() may be called from any
// thread (the request is queued and applied at the start of the next step).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/kv_block_pool.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/llama_model.h"
#include "model/tokenizer.h"
#include "model/tokenizer_incremental.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

struct EngineOptions {
  int n_threads = 2;
  int block_size = 16;
  int64_t kv_budget_bytes = 512ll << 20;
  int max_batch_tokens = 512;  // tokens per forward step
  int max_concurrent_sequences = 64;
};

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };
const char* FinishReasonName(FinishReason r);  // "stop", "length", ...

struct GenerationRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int max_tokens = 256;
  std::vector<std::string> stop;        // stop strings
  std::vector<int32_t> stop_token_ids;  // extra tokens that end generation (not emitted)
  bool ignore_eos = false;
};

struct SequenceOutput {
  int64_t seq_id = 0;
  std::vector<int32_t> new_tokens;
  std::string text;  // text completed this step (never half a UTF-8 char)
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
};

class Engine {
 public:
  Engine(LlamaModel& model, const Tokenizer& tokenizer, const EngineOptions& options);
  ~Engine();

  // Validates and queues a request. Errors: empty prompt, prompt + max_tokens
  // over the context, bad sampling params, too many stop strings.
  Expected<int64_t> Add(GenerationRequest request);
  void Cancel(int64_t seq_id);
  bool HasWork() const { return !seqs_.empty(); }
  // One iteration; appends what each sequence produced to *outputs.
  Status Step(std::vector<SequenceOutput>* outputs);

  const KvBlockPool& block_pool() const { return pool_; }
  const KvCache& kv_cache() const { return kv_; }
  ThreadPool& threads() { return threads_; }
  LlamaModel& model() { return model_; }
  int64_t context_limit() const { return model_.config().context_length; }
  // Sequences preempted (KV blocks taken back, recomputed later) so far.
  int64_t num_preemptions() const { return num_preemptions_; }

 private:
  struct Sequence;
  void Finish(Sequence& s, FinishReason reason, SequenceOutput* out);
  bool AllocateOrPreempt(Sequence& s, int64_t need, const std::vector<Sequence*>& scheduled);

  LlamaModel& model_;
  const Tokenizer& tokenizer_;
  EngineOptions opts_;
  ThreadPool threads_;
  KvCache kv_;
  KvBlockPool pool_;
  std::vector<std::unique_ptr<Sequence>> seqs_;  // arrival order
  int64_t next_id_ = 1;
  int64_t num_preemptions_ = 0;
  std::mutex cancel_mu_;  // guards cancel_requests_ (Cancel may run on any thread)
  std::vector<int64_t> cancel_requests_;
  Batch batch_;
  std::vector<float> logits_;
};

}  // namespace brisk
