// The engine thread with the real default model: submissions from several
// threads, cancellation, bounded admission.
#include "engine/engine_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include "engine/default_model_test_base.h"

namespace brisk {
namespace {

using EngineLoopTest = DefaultModelTest;

struct Collector {
  std::mutex mu;
  std::map<int64_t, std::string> text;
  std::map<int64_t, FinishReason> reason;
  std::atomic<int> done{0};
  OutputSink Sink(int64_t key) {
    return [this, key](const SequenceOutput& o, const Status&) {
      std::lock_guard<std::mutex> lock(mu);
      text[key] += o.text;
      if (o.finished) {
        reason[key] = o.reason;
        ++done;
      }
    };
  }
};

TEST_F(EngineLoopTest, SubmitFromThreadsAndCancel) {
  Engine engine(*model_, *tok_, {});
  EngineLoop loop(engine);
  Collector c;
  std::vector<std::thread> threads;
  std::atomic<int64_t> cancel_ticket{-1};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto r = Greedy("Count: 1, 2, 3,", i == 0 ? 400 : 8);
      r.ignore_eos = i == 0;
      auto t = loop.Submit(std::move(r), c.Sink(i));
      ASSERT_TRUE(t.ok());
      if (i == 0) cancel_ticket = *t;
    });
  }
  for (auto& t : threads) t.join();
  while (c.done.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  loop.Cancel(cancel_ticket.load());
  while (c.done.load() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(c.reason[0], FinishReason::kCancelled);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(c.reason[i], FinishReason::kLength);
  EXPECT_EQ(c.text[1], c.text[2]);
  EXPECT_EQ(loop.num_active(), 0);
  loop.Stop();
  EXPECT_EQ(engine.block_pool().num_used(), 0);
}

TEST_F(EngineLoopTest, FullQueueIsRejectedAtOnceWithRetryAfter) {
  EngineOptions o;
  o.scheduler.max_concurrent_sequences = 1;
  o.scheduler.max_waiting[0] = 2;
  Engine engine(*model_, *tok_, o);
  EngineLoop loop(engine);
  Collector c;
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 10; ++i) {
    auto r = Greedy("Tell me a long story:", 64);
    r.ignore_eos = true;
    auto t = loop.Submit(std::move(r), c.Sink(i));
    if (t.ok()) {
      ++accepted;
    } else {
      EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted);
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_LE(accepted, 4);
  EXPECT_GE(loop.RetryAfterSeconds(Priority::kInteractive), 1.0);
  // Bad requests fail at Submit, on the caller's thread.
  GenerationRequest empty;
  EXPECT_EQ(loop.Submit(empty, c.Sink(99)).status().code(), StatusCode::kInvalidArgument);
  while (c.done.load() < accepted) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GT(loop.Load().finished_per_s, 0.0);
}

}  // namespace
}  // namespace brisk
