// The engine thread. HTTP threads never run the model: they Submit()
// requests and Cancel() them through a queue; the loop thread owns the
// Engine (scheduler, KV pool, forward pass) and hands every output to the
// request's sink. Admission is bounded per priority and answered at once,
// on the caller's thread, with an honest Retry-After estimate.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"

namespace brisk {

// Called on the engine thread for each output of a request (every sample);
// must not block. `error` is not ok when the request failed inside the engine
// (then out.finished is true and out.reason kError); ResourceExhausted means
// the queue filled up between Submit() and the engine taking the request.
using OutputSink = std::function<void(const SequenceOutput& out, const Status& error)>;

struct EngineLoopStats {
  SchedulerStats scheduler;
  int32_t queued[kNumPriorities] = {0, 0};  // waiting in the scheduler + not yet handed over
  double finished_per_s = 0;                // over the last 30 s
  double tokens_per_s = 0;                  // prompt + generated tokens computed, EWMA
  int64_t kv_blocks_total = 0;
};

class EngineLoop {
 public:
  // on_step (optional) runs on the engine thread after every step.
  using StepHook = std::function<void(const StepStats&, const SchedulerStats&)>;
  explicit EngineLoop(Engine& engine, StepHook on_step = nullptr);
  ~EngineLoop();  // Stop()

  // Thread-safe. Validates the request and admits it, or fails at once:
  // InvalidArgument/OutOfRange for a bad request, ResourceExhausted when the
  // queue of its priority is full, Unavailable after Stop(). Returns a
  // ticket for Cancel().
  Expected<int64_t> Submit(GenerationRequest request, OutputSink sink);
  // Thread-safe; the request's sink gets a kCancelled output within one step.
  void Cancel(int64_t ticket);
  // Thread-safe snapshot, refreshed every step.
  EngineLoopStats stats() const;
  // Seconds a client should wait before retrying a request of priority p:
  // the queue ahead of it divided by the measured drain rate.
  double RetryAfterSeconds(Priority p) const;
  // Requests admitted and not finished (queued or running).
  int64_t num_active() const { return active_.load(); }
  // Ends the thread; requests still in flight get kCancelled.
  void Stop();

 private:
  struct Pending {
    int64_t ticket;
    GenerationRequest request;
    OutputSink sink;
  };
  struct Active {
    int64_t ticket;
    OutputSink sink;
    int remaining;  // samples not finished
    Priority priority;
  };
  void Run();
  void RefreshStats();

  Engine& engine_;
  StepHook on_step_;
  const int max_queued_[kNumPriorities];
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> inbox_;
  std::vector<int64_t> cancels_;
  int32_t inbox_count_[kNumPriorities] = {0, 0};
  EngineLoopStats stats_;       // guarded by mu_
  double avg_work_tokens_ = 0;  // prompt + max_tokens per request, EWMA
  bool stopping_ = false;
  std::atomic<int64_t> next_ticket_{1};
  std::atomic<int64_t> active_{0};
  // Engine thread only:
  std::unordered_map<int64_t, int64_t> ticket_to_id_;
  std::unordered_map<int64_t, Active> by_id_;
  double token_rate_ewma_ = 0;
  std::thread thread_;
};

}  // namespace brisk
