// The engine thread: the in-process EngineClient. Callers never run the
// model: they Submit() requests and Cancel() them through a queue; the loop
// thread owns the Engine (scheduler, KV pool, forward pass) and hands every
// output to the request's sink. Admission is bounded per priority and
// answered at once, on the caller's thread, with an honest Retry-After
// estimate.
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
#include "engine/engine_client.h"
#include "engine/kv_event_publisher.h"

namespace brisk {

class EngineLoop final : public EngineClient {
 public:
  // `kv_events` (optional, outliving the loop) gets the engine's KV events
  // (Engine::TakeKvEvents) after every step.
  explicit EngineLoop(Engine& engine, KvEventPublisher* kv_events = nullptr);
  ~EngineLoop() override;  // Stop()

  EngineInfo info() const override;
  // Thread-safe. Validates the request and admits it, or fails at once (see
  // EngineClient::Submit).
  Expected<int64_t> Submit(GenerationRequest request, OutputSink sink) override;
  // Thread-safe; the request's sink gets kCancelled outputs within one step.
  void Cancel(int64_t request_id) override;
  // Thread-safe snapshot, refreshed every step.
  EngineLoad Load() const override;
  // The queue ahead of a new request of priority p divided by the measured
  // drain rate.
  double RetryAfterSeconds(Priority p) const override;
  void SetStepObserver(StepObserver observer) override { on_step_ = std::move(observer); }
  // Requests admitted and not finished (queued or running).
  int64_t num_active() const { return active_.load(); }
  // Ends the thread; requests still in flight get kCancelled.
  void Stop();

 private:
  struct Pending {
    int64_t request_id;
    GenerationRequest request;
    OutputSink sink;
  };
  struct Active {
    OutputSink sink;
    int remaining;  // samples not finished
    Priority priority;
  };
  void Run();
  void Admit(std::vector<Pending>& incoming);
  void Deliver(const std::vector<SequenceOutput>& outs);
  void FailAll(const Status& st);
  void RefreshStats();
  void PublishKvEvents();

  Engine& engine_;
  KvEventPublisher* kv_events_;
  StepObserver on_step_;
  const int max_queued_[kNumPriorities];
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> inbox_;
  std::vector<int64_t> cancels_;
  int32_t inbox_count_[kNumPriorities] = {0, 0};
  EngineLoad stats_;            // guarded by mu_
  double avg_work_tokens_ = 0;  // prompt + max_tokens per request, EWMA
  bool stopping_ = false;
  std::atomic<int64_t> next_request_id_{1};
  std::atomic<int64_t> active_{0};
  // Engine thread only:
  std::unordered_map<int64_t, Active> by_id_;
  double token_rate_ewma_ = 0;
  std::thread thread_;
};

}  // namespace brisk
