// The seam between the front door (or the gateway) and an engine.
//
// The OpenAI server reaches an engine only through this interface: it submits
// a tokenized request with its sampling and limits, receives every output
// through a sink, cancels, and reads load. Nothing crosses the seam but plain
// data (GenerationRequest in, SequenceOutput and EngineLoad out; no pointers
// into engine memory), so an implementation may live in this process (the
// engine thread, engine/engine_loop.h) or behind the network (a client of a
// remote `brisk serve`), and a test may script one.
//
// Time: GenerationRequest::arrival and ::deadline are steady_clock points of
// the caller's process; an implementation that crosses processes sends the
// time left instead.
#pragma once

#include <cstdint>
#include <functional>

#include "engine/generation.h"
#include "engine/kv_disk_store.h"
#include "engine/scheduler.h"
#include "util/status.h"

namespace brisk {

// Called once per output of a request (every sample, every step that produced
// something, then exactly one finished output per sample). It may run on an
// engine-owned thread and must not block: hand the output to your own
// executor. `error` is not ok when the request failed inside the engine (then
// out.finished is true and out.reason kError); ResourceExhausted means the
// queue filled up between Submit() and the engine taking the request.
using OutputSink = std::function<void(const SequenceOutput& out, const Status& error)>;

// A load snapshot: what routing, admission and metrics read.
struct EngineLoad {
  SchedulerStats scheduler;                 // running / waiting sequences, KV blocks, prefix cache
  int32_t queued[kNumPriorities] = {0, 0};  // waiting in the engine + not yet handed over
  double finished_per_s = 0;                // requests, over the last 30 s
  double tokens_per_s = 0;                  // prompt + generated tokens computed, EWMA
  int64_t kv_blocks_total = 0;
  int64_t kv_bytes_per_block = 0;  // a block's K/V with all its pages
  KvDiskStats kv_disk;             // the disk tier under the prefix cache
};

// Facts about the served model that request preparation needs.
struct EngineInfo {
  int64_t context_limit = 0;  // prompt + max_tokens at most
  int32_t vocab_size = 0;
};

class EngineClient {
 public:
  virtual ~EngineClient() = default;

  virtual EngineInfo info() const = 0;
  // Thread-safe. Validates and admits the request, or fails at once:
  // InvalidArgument/OutOfRange for a bad request, ResourceExhausted when the
  // queue of its priority is full, Unavailable when shutting down. Returns
  // the request id (for Cancel; outputs carry it as request_id).
  virtual Expected<int64_t> Submit(GenerationRequest request, OutputSink sink) = 0;
  // Thread-safe; the sink gets a kCancelled finished output per unfinished
  // sample soon after (within one engine step in process). Unknown or
  // finished ids are ignored.
  virtual void Cancel(int64_t request_id) = 0;
  // Thread-safe snapshot.
  virtual EngineLoad Load() const = 0;
  // Seconds a client should wait before retrying a request of priority p.
  virtual double RetryAfterSeconds(Priority p) const = 0;
  // Engine-local step numbers (for metrics), called after each step on the
  // engine's thread. Set before the first Submit. An engine in another
  // process reports these on its own /metrics and may ignore this.
  using StepObserver = std::function<void(const StepStats&)>;
  virtual void SetStepObserver(StepObserver observer) = 0;
};

}  // namespace brisk
