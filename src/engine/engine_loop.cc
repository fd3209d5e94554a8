#include "engine/engine_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "util/log.h"

namespace brisk {

EngineLoop::EngineLoop(Engine& engine, KvEventPublisher* kv_events)
    : engine_(engine),
      kv_events_(kv_events),
      max_queued_{engine.scheduler().options().max_waiting[0],
                  engine.scheduler().options().max_waiting[1]} {
  stats_.kv_blocks_total = engine.block_pool().num_blocks();
  const KvCacheShape& kv = engine.kv_cache().shape();
  stats_.kv_bytes_per_block = kv.BytesPerPage() * (1 + kv.local_groups);
  thread_ = std::thread([this] { Run(); });
}

EngineLoop::~EngineLoop() { Stop(); }

EngineInfo EngineLoop::info() const {
  EngineInfo i;
  i.context_limit = engine_.context_limit();
  i.vocab_size = engine_.vocab_size();
  return i;
}

void EngineLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Expected<int64_t> EngineLoop::Submit(GenerationRequest request, OutputSink sink) {
  RETURN_IF_ERROR(engine_.Validate(request));
  const int p = static_cast<int>(request.priority);
  const int64_t work = static_cast<int64_t>(request.prompt.size()) +
                       int64_t{request.max_tokens} * std::max(1, request.n);
  int64_t request_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Status(StatusCode::kUnavailable, "the engine is shutting down");
    // stats_.scheduler.waiting lags by at most one step (conservative: a
    // sequence admitted during the step is still counted).
    // Counted in sequences: a request of n samples takes n places.
    const int n = std::max(1, request.n);
    if (n > max_queued_[p])
      return InvalidArgument("n = {} is more than the {} queue holds ({})", n,
                             PriorityName(request.priority), max_queued_[p]);
    const int32_t queued = stats_.scheduler.queued[p] + inbox_count_[p];
    if (queued + n > max_queued_[p])
      return ResourceExhausted("the {} queue is full ({} waiting)", PriorityName(request.priority),
                               queued);
    request_id = next_request_id_++;
    inbox_count_[p] += n;
    avg_work_tokens_ =
        avg_work_tokens_ == 0 ? double(work) : 0.95 * avg_work_tokens_ + 0.05 * double(work);
    inbox_.push_back({request_id, std::move(request), std::move(sink)});
    ++active_;
  }
  cv_.notify_one();
  return request_id;
}

void EngineLoop::Cancel(int64_t request_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(request_id);
  }
  cv_.notify_one();
}

EngineLoad EngineLoop::Load() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineLoad s = stats_;
  s.kv_disk = engine_.kv_disk_stats();  // thread-safe, and fresh: the writer runs between steps
  for (int p = 0; p < kNumPriorities; ++p)
    s.queued[p] = stats_.scheduler.waiting[p] + inbox_count_[p];
  return s;
}

double EngineLoop::RetryAfterSeconds(Priority prio) const {
  std::lock_guard<std::mutex> lock(mu_);
  const int p = static_cast<int>(prio);
  // Everything at this priority or above is ahead of a new request.
  int64_t ahead = 0;
  for (int q = 0; q <= p; ++q)
    ahead += stats_.scheduler.waiting[q] + inbox_count_[q] + stats_.scheduler.running[q];
  double s = 1;
  if (stats_.finished_per_s > 0) {
    s = double(ahead + 1) / stats_.finished_per_s;
  } else if (stats_.tokens_per_s > 0) {
    s = double(ahead + 1) * avg_work_tokens_ / stats_.tokens_per_s;
  }
  return std::clamp(std::ceil(s), 1.0, 600.0);
}

void EngineLoop::RefreshStats() {
  const double now = engine_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  stats_.scheduler = engine_.scheduler().stats();
  stats_.finished_per_s = engine_.scheduler().FinishedPerSecond(now);
  stats_.tokens_per_s = token_rate_ewma_;
}

void EngineLoop::Admit(std::vector<Pending>& incoming) {
  for (Pending& in : incoming) {
    const Priority prio = in.request.priority;
    const int n = std::max(1, in.request.n);
    Status st = engine_.Add(in.request_id, std::move(in.request));
    {
      std::lock_guard<std::mutex> lock(mu_);
      inbox_count_[static_cast<int>(prio)] -= n;
    }
    if (!st.ok()) {
      SequenceOutput out;
      out.request_id = in.request_id;
      out.finished = true;
      out.reason = FinishReason::kError;
      in.sink(out, st);
      --active_;
      continue;
    }
    by_id_[in.request_id] = Active{std::move(in.sink), n, prio};
  }
  incoming.clear();
}

void EngineLoop::Deliver(const std::vector<SequenceOutput>& outs) {
  for (const SequenceOutput& out : outs) {
    auto it = by_id_.find(out.request_id);
    if (it == by_id_.end()) continue;
    it->second.sink(out, Status::Ok());
    if (out.finished && --it->second.remaining == 0) {
      by_id_.erase(it);
      --active_;
    }
  }
}

// A broken step fails everyone rather than spinning.
void EngineLoop::FailAll(const Status& st) {
  for (auto& [id, a] : by_id_) {
    engine_.Cancel(id);
    SequenceOutput out;
    out.request_id = id;
    out.finished = true;
    out.reason = FinishReason::kError;
    a.sink(out, st);
    --active_;
  }
  by_id_.clear();
  std::vector<SequenceOutput> outs;
  (void)engine_.Step(&outs);  // frees what the cancels left
}

void EngineLoop::PublishKvEvents() {
  if (!kv_events_) return;
  std::vector<KvEvent> events = engine_.TakeKvEvents();
  if (events.empty()) return;
  const double ts =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  kv_events_->Publish(ts, std::move(events));
}

void EngineLoop::Run() {
  std::vector<SequenceOutput> outs;
  std::vector<Pending> incoming;
  std::vector<int64_t> cancels;
  PublishKvEvents();  // AllBlocksCleared: a new process holds nothing
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stopping_ || !inbox_.empty() || !cancels_.empty() || engine_.HasWork();
      });
      if (stopping_) break;
      incoming.assign(std::make_move_iterator(inbox_.begin()),
                      std::make_move_iterator(inbox_.end()));
      inbox_.clear();
      cancels.swap(cancels_);
    }
    Admit(incoming);
    for (int64_t id : cancels) engine_.Cancel(id);
    cancels.clear();
    if (!engine_.HasWork()) {
      RefreshStats();
      continue;
    }

    outs.clear();
    const auto t_step = Clock::now();
    Status st = engine_.Step(&outs);
    const double dt = std::chrono::duration<double>(Clock::now() - t_step).count();
    Deliver(outs);
    if (!st.ok()) {
      log::Error("engine step failed: {}", st.ToString());
      FailAll(st);
    }
    PublishKvEvents();
    const StepStats& ss = engine_.last_step();
    const int32_t tokens = ss.prefill_tokens + ss.decode_tokens;
    if (dt > 0 && tokens > 0) {
      const double rate = tokens / dt;
      token_rate_ewma_ = token_rate_ewma_ == 0 ? rate : 0.9 * token_rate_ewma_ + 0.1 * rate;
    }
    RefreshStats();
    if (on_step_) on_step_(ss);
  }
  // Shutting down: everyone still in flight is cancelled.
  for (auto& [id, a] : by_id_) {
    SequenceOutput out;
    out.request_id = id;
    out.finished = true;
    out.reason = FinishReason::kCancelled;
    a.sink(out, Status::Ok());
  }
  by_id_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  for (Pending& in : inbox_) {
    SequenceOutput out;
    out.request_id = in.request_id;
    out.finished = true;
    out.reason = FinishReason::kCancelled;
    in.sink(out, Status::Ok());
  }
  inbox_.clear();
}

}  // namespace brisk
