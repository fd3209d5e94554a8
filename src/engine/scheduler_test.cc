// The scheduler with no model, driven by scheduler_test_sim.h (made-up
// deterministic forward outputs, invariants checked every step).
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine/scheduler_test_sim.h"

namespace brisk {
namespace {

using namespace scheduler_test;

TEST(SchedulerTest, ChunkedPrefillThenDecode) {
  Sim sim(Opts(32), 64);
  sim.Add(MakeSeq(1, 100), 3);
  std::vector<int> chunks;
  for (int i = 0; i < 4; ++i) chunks.push_back(sim.Step().chunks.at(0).n_tokens);
  EXPECT_EQ(chunks, (std::vector<int>{32, 32, 32, 4}));
  auto out = sim.Step();
  EXPECT_EQ(out.num_decode_tokens, 1);
  sim.RunAll();
  EXPECT_EQ(sim.outputs[1].size(), 3u);
}

TEST(SchedulerTest, DecodesGoFirstAndLongPromptsDoNotStallThem) {
  Sim sim(Opts(16), 256);
  sim.Add(MakeSeq(1, 4), 50);
  sim.Step();  // prefill of 1
  sim.Add(MakeSeq(2, 200, Priority::kInteractive, 0.001), 2);
  for (int i = 0; i < 5; ++i) {
    auto out = sim.Step();
    ASSERT_GE(out.chunks.size(), 1u);
    EXPECT_EQ(out.chunks[0].id, 1);
    EXPECT_EQ(out.chunks[0].n_tokens, 1);
    ASSERT_EQ(out.chunks.size(), 2u);
    EXPECT_EQ(out.chunks[1].n_tokens, 15);  // the rest of the budget
  }
}

TEST(SchedulerTest, BudgetAndAccountingUnderRandomLoad) {
  for (bool prefix : {false, true}) {
    SchedulerOptions o = Opts(48, 8, 4);
    o.prefix_cache = prefix;
    Sim sim(o, 60);
    std::mt19937 rng(3);
    int64_t next = 1;
    for (int step = 0; step < 3000; ++step) {
      if (rng() % 3 == 0 && next <= 200) {
        const int n = 1 + rng() % 40;
        auto s = MakeSeq(next, n, rng() % 2 ? Priority::kBatch : Priority::kInteractive, sim.now,
                         static_cast<int>(rng() % 3) * 7);
        s.salt = RootBlockHash("t");
        s.tenant = rng() % 3;
        sim.Add(std::move(s), 1 + rng() % 30);
        ++next;
      }
      if (rng() % 50 == 0 && next > 2) sim.sched.Abort(1 + rng() % (next - 1));
      sim.Step();
    }
    sim.RunAll();
  }
}

// Prefix cache + forks (n > 1) + preemption + aborts together: no block leaks
// or double frees (refcounts match owners after every step).
TEST(SchedulerTest, ForksPrefixCachePreemptionAndAbortsKeepAccounting) {
  SchedulerOptions o = Opts(40, 12, 4);
  o.prefix_cache = true;
  Sim sim(o, 48);
  sim.fork_children = 2;
  std::mt19937 rng(9);
  int64_t next = 1;
  for (int step = 0; step < 4000; ++step) {
    if (rng() % 4 == 0 && next <= 150) {
      auto s = MakeSeq(next, 1 + rng() % 30, rng() % 3 ? Priority::kInteractive : Priority::kBatch,
                       sim.now, static_cast<int>(rng() % 2) * 5);
      const bool a = rng() % 2;
      s.salt = RootBlockHash(a ? "a" : "b");
      s.tenant = a ? 1 : 2;
      sim.Add(std::move(s), 1 + rng() % 20);
      ++next;
    }
    if (rng() % 40 == 0) {
      std::vector<int64_t> ids;
      for (auto& [id, g] : sim.max_gen)
        if (sim.sched.Find(id)) ids.push_back(id);
      if (!ids.empty()) sim.sched.Abort(ids[rng() % ids.size()]);
    }
    sim.Step();
  }
  sim.RunAll();
  EXPECT_GT(sim.sched.stats().preemptions, 0);
  EXPECT_GT(sim.sched.stats().prefix_hit_tokens, 0);
}

// n > 1: a request holds a running slot for every sample it will fork, so
// forks never take the running set over max_concurrent_sequences (two n = 8
// requests with a cap of 2 used to run 16 sequences).
TEST(SchedulerTest, ForksCountAgainstTheRunningCap) {
  Sim sim(Opts(64, 10, 4), 512);
  sim.fork_children = 3;  // n = 4
  for (int64_t id = 1; id <= 6; ++id) {
    auto s = MakeSeq(id, 6, Priority::kInteractive, 0, static_cast<int>(id) * 10);
    s.num_seats = 4;
    sim.Add(std::move(s), 5);
  }
  int max_running = 0;
  for (int i = 0; i < 1000 && sim.sched.HasWork(); ++i) {
    sim.Step();
    const auto st = sim.sched.stats();
    max_running = std::max(max_running, st.running[0] + st.running[1]);
    ASSERT_LE(st.running[0] + st.running[1], 10);
  }
  EXPECT_FALSE(sim.sched.HasWork());
  EXPECT_EQ(max_running, 8);  // two requests of 4 fit under 10; a third does not
  EXPECT_EQ(sim.outputs.size(), 24u);
}

TEST(SchedulerTest, SamplesCountInTheWaitingBoundAndMustFitTheCap) {
  SchedulerOptions o = Opts(64, 8, 4);
  o.max_waiting[0] = 10;
  KvBlockPool pool(64);
  Scheduler sched(o, &pool);
  auto a = MakeSeq(1, 4);
  a.num_seats = 8;
  EXPECT_TRUE(sched.Add(std::move(a)).ok());
  auto b = MakeSeq(2, 4);
  b.num_seats = 3;  // 8 + 3 > 10 waiting places
  EXPECT_EQ(sched.Add(std::move(b)).code(), StatusCode::kResourceExhausted);
  auto c = MakeSeq(3, 4);
  c.num_seats = 9;  // more than may ever run at once
  EXPECT_EQ(sched.Add(std::move(c)).code(), StatusCode::kInvalidArgument);
}

TEST(SchedulerTest, FcfsWithinPriority) {
  Sim sim(Opts(64, 1), 64);
  for (int i = 1; i <= 5; ++i) sim.Add(MakeSeq(i, 3, Priority::kInteractive, 0.1 * i), 2);
  sim.RunAll();
  EXPECT_EQ(sim.finish_order, (std::vector<int64_t>{1, 2, 3, 4, 5}));
}

TEST(SchedulerTest, InteractiveBeforeEarlierBatch) {
  Sim sim(Opts(64, 1), 64);
  sim.Add(MakeSeq(1, 3, Priority::kBatch, 0.0), 2);
  sim.Add(MakeSeq(2, 3, Priority::kInteractive, 0.001), 2);
  sim.RunAll();
  EXPECT_EQ(sim.finish_order, (std::vector<int64_t>{2, 1}));
}

TEST(SchedulerTest, InteractiveTakesTheSlotOfARunningBatchSequence) {
  Sim sim(Opts(64, 1), 64);
  sim.Add(MakeSeq(1, 3, Priority::kBatch, 0.0), 20);
  sim.Step();
  sim.Step();
  sim.Add(MakeSeq(2, 3, Priority::kInteractive, sim.now), 2);
  auto out = sim.Step();
  EXPECT_EQ(out.preempted, (std::vector<int64_t>{1}));
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].id, 2);
  sim.RunAll();
  EXPECT_EQ(sim.finish_order, (std::vector<int64_t>{2, 1}));
}

TEST(SchedulerTest, BatchDoesNotStarveUnderAStreamOfInteractiveWork) {
  SchedulerOptions o = Opts(8, 1);
  o.aging_s = 1.0;
  Sim sim(o, 64);
  sim.Add(MakeSeq(1000, 3, Priority::kBatch, 0.0), 2);
  int64_t id = 1;
  // A new interactive request every step keeps the single slot busy forever
  // unless the batch request ages into the interactive class.
  for (int step = 0; step < 2000 && sim.sched.Find(1000); ++step) {
    sim.Add(MakeSeq(id, 3, Priority::kInteractive, sim.now), 3);
    ++id;
    sim.Step();
  }
  EXPECT_EQ(sim.sched.Find(1000), nullptr) << "batch request starved";
  EXPECT_GE(sim.now, 1.0);
}

TEST(SchedulerTest, DeadlinesFireInEveryState) {
  Sim sim(Opts(8, 1), 64);
  auto a = MakeSeq(1, 20);  // prefilling (chunked)
  a.deadline_s = 0.025;
  auto b = MakeSeq(2, 3, Priority::kInteractive, 0.001);  // waiting behind 1
  b.deadline_s = 0.015;
  sim.Add(std::move(a), 100);
  sim.Add(std::move(b), 100);
  auto c = MakeSeq(3, 2, Priority::kInteractive, 0.002);
  sim.Add(std::move(c), 100);
  sim.Step();             // t = 0
  sim.Step();             // 0.01
  auto out = sim.Step();  // 0.02: 2 expired while waiting
  EXPECT_EQ(out.expired, (std::vector<int64_t>{2}));
  out = sim.Step();  // 0.03: 1 expired while running
  EXPECT_EQ(out.expired, (std::vector<int64_t>{1}));
  EXPECT_EQ(sim.sched.Find(1), nullptr);
  sim.CheckAccounting();
  sim.sched.Abort(3);
  EXPECT_EQ(sim.pool.num_used(), 0);
}

TEST(SchedulerTest, AbortFreesBlocksInAnyState) {
  Sim sim(Opts(8, 1), 64);
  sim.Add(MakeSeq(1, 20), 10);
  sim.Add(MakeSeq(2, 20, Priority::kInteractive, 1), 10);
  sim.Step();
  EXPECT_GT(sim.pool.num_used(), 0);
  sim.sched.Abort(2);  // waiting
  sim.sched.Abort(1);  // prefilling
  EXPECT_EQ(sim.pool.num_used(), 0);
  EXPECT_FALSE(sim.sched.HasWork());
  sim.Add(MakeSeq(3, 2), 10);
  for (int i = 0; i < 4; ++i) sim.Step();  // decoding
  sim.sched.Abort(3);
  EXPECT_EQ(sim.pool.num_used(), 0);
}

TEST(SchedulerTest, WaitingQueueIsBoundedPerPriority) {
  SchedulerOptions o = Opts();
  o.max_waiting[0] = 2;
  o.max_waiting[1] = 1;
  KvBlockPool pool(64);
  Scheduler s(o, &pool);
  EXPECT_TRUE(s.Add(MakeSeq(1, 3)).ok());
  EXPECT_TRUE(s.Add(MakeSeq(2, 3)).ok());
  EXPECT_EQ(s.Add(MakeSeq(3, 3)).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(s.Add(MakeSeq(4, 3, Priority::kBatch)).ok());
  EXPECT_EQ(s.Add(MakeSeq(5, 3, Priority::kBatch)).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.Add(MakeSeq(6, 1000)).code(), StatusCode::kInvalidArgument);  // never fits
  auto st = s.stats();
  EXPECT_EQ(st.waiting[0], 2);
  EXPECT_EQ(st.waiting[1], 1);
}

TEST(SchedulerTest, PreemptionUnderKvPressureKeepsOutputs) {
  // Reference: each request alone.
  std::map<int64_t, std::vector<int32_t>> alone;
  for (int64_t id = 1; id <= 6; ++id) {
    Sim sim(Opts(32, 8), 64);
    sim.Add(MakeSeq(id, 10 + static_cast<int>(id), Priority::kInteractive, 0, 100 * id), 24);
    sim.RunAll();
    alone[id] = sim.outputs[id];
  }
  // Together in a pool far too small for all of them at once.
  Sim sim(Opts(32, 8), 20);
  for (int64_t id = 1; id <= 6; ++id)
    sim.Add(MakeSeq(id, 10 + static_cast<int>(id), Priority::kInteractive, 0.001 * id, 100 * id),
            24);
  sim.RunAll();
  EXPECT_GT(sim.sched.stats().preemptions, 0);
  for (int64_t id = 1; id <= 6; ++id) EXPECT_EQ(sim.outputs[id], alone[id]) << "seq " << id;
}

TEST(SchedulerTest, PreemptsLowestPriorityLatestArrival) {
  Sim sim(Opts(64, 8, 4), 12);
  sim.Add(MakeSeq(1, 8, Priority::kInteractive, 0.0), 100);
  sim.Add(MakeSeq(2, 8, Priority::kBatch, 0.001), 100);
  sim.Add(MakeSeq(3, 8, Priority::kInteractive, 0.002), 100);
  std::vector<int64_t> preempted;
  for (int i = 0; i < 12 && preempted.empty(); ++i) preempted = sim.Step().preempted;
  ASSERT_FALSE(preempted.empty());
  EXPECT_EQ(preempted[0], 2);
}

TEST(SchedulerTest, ForkSharesBlocksAndCopiesOnWrite) {
  Sim sim(Opts(64, 8, 4), 64);
  sim.Add(MakeSeq(1, 10), 5);  // 10 tokens: 2 full blocks + a partial one
  auto out = sim.sched.Schedule(0);
  ASSERT_EQ(out.chunks.size(), 1u);
  SeqResult r;
  r.id = 1;
  r.token = 7;
  r.forks = {{2, 8}, {3, 9}};
  sim.max_gen[2] = sim.max_gen[3] = 5;
  sim.outputs[1] = {7};
  sim.outputs[2] = {8};
  sim.outputs[3] = {9};
  sim.sched.UpdateFromOutput(out, std::vector<SeqResult>{r});
  sim.CheckAccounting();
  const SeqState* a = sim.sched.Find(1);
  const SeqState* c = sim.sched.Find(3);
  ASSERT_TRUE(a && c);
  EXPECT_EQ(a->blocks, c->blocks);
  EXPECT_EQ(sim.pool.RefCount(a->blocks[0]), 3);
  EXPECT_EQ(c->tokens.back(), 9);
  EXPECT_EQ(a->tokens.back(), 7);
  out = sim.Step();
  // Two of the three copy the partial block; the last writes it in place.
  EXPECT_EQ(out.block_copies.size(), 2u);
  EXPECT_EQ(sim.pool.RefCount(sim.sched.Find(1)->blocks[0]), 3);  // full blocks stay shared
  sim.RunAll();
}

TEST(SchedulerTest, StaticBatchingWaitsForTheWholeBatch) {
  SchedulerOptions o = Opts(64, 2);
  o.continuous_batching = false;
  Sim sim(o, 64);
  sim.Add(MakeSeq(1, 3, Priority::kInteractive, 0.0), 2);
  sim.Add(MakeSeq(2, 3, Priority::kInteractive, 0.001), 10);
  sim.Add(MakeSeq(3, 3, Priority::kInteractive, 0.002), 2);
  int steps_until_3 = 0;
  while (sim.sched.Find(3)->status == SeqStatus::kWaiting) {
    sim.Step();
    ++steps_until_3;
  }
  // 3 joins only after 2 (the longest of the first batch) finished.
  EXPECT_EQ(sim.sched.Find(2), nullptr);
  EXPECT_GE(steps_until_3, 10);
  sim.RunAll();
}

// A static batch is everything waiting (up to max_concurrent_sequences),
// even when the prompts take several steps of the token budget to prefill;
// nothing joins until the whole batch is done.
TEST(SchedulerTest, StaticBatchFillsPastOneStepsBudget) {
  SchedulerOptions o = Opts(16, 4);
  o.continuous_batching = false;
  Sim sim(o, 256);
  for (int64_t id = 1; id <= 6; ++id)
    sim.Add(MakeSeq(id, 10, Priority::kInteractive, 0.001 * id, 100 * id), id == 1 ? 20 : 3);
  sim.Step();
  EXPECT_EQ(sim.sched.stats().running[0] + sim.sched.stats().running[1], 4);
  int first_batch_steps = 0;
  while (sim.sched.Find(1) != nullptr) {
    for (int64_t id = 5; id <= 6; ++id) EXPECT_EQ(sim.sched.Find(id)->status, SeqStatus::kWaiting);
    sim.Step();
    ++first_batch_steps;
  }
  EXPECT_GE(first_batch_steps, 19);
  sim.RunAll();
  for (int64_t id = 1; id <= 6; ++id) EXPECT_EQ(sim.outputs[id].size(), id == 1 ? 20u : 3u);
}

TEST(SchedulerTest, ContinuousBatchingAdmitsAsSoonAsASlotFrees) {
  Sim sim(Opts(64, 2), 64);
  sim.Add(MakeSeq(1, 3, Priority::kInteractive, 0.0), 2);
  sim.Add(MakeSeq(2, 3, Priority::kInteractive, 0.001), 10);
  sim.Add(MakeSeq(3, 3, Priority::kInteractive, 0.002), 2);
  int steps = 0;
  while (sim.sched.Find(3)->status == SeqStatus::kWaiting) {
    sim.Step();
    ++steps;
  }
  EXPECT_LE(steps, 3);
  sim.RunAll();
}

TEST(SchedulerTest, PrefixCacheReusesFullBlocksPerSalt) {
  SchedulerOptions o = Opts(64, 4, 4);
  o.prefix_cache = true;
  Sim sim(o, 64);
  auto a = MakeSeq(1, 18);
  a.salt = RootBlockHash("tenant-a");
  sim.Add(std::move(a), 2);
  sim.RunAll();
  auto b = MakeSeq(2, 18);  // same prompt, same tenant: 4 full blocks cached
  b.salt = RootBlockHash("tenant-a");
  sim.Add(std::move(b), 2);
  auto out = sim.Step();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].pos_begin, 16);
  EXPECT_EQ(sim.sched.Find(2)->num_cached_prompt, 16);
  sim.RunAll();
  EXPECT_EQ(sim.outputs[1], sim.outputs[2]);
  auto c = MakeSeq(3, 18);  // another tenant: nothing shared
  c.salt = RootBlockHash("tenant-b");
  sim.Add(std::move(c), 2);
  out = sim.Step();
  EXPECT_EQ(out.chunks[0].pos_begin, 0);
  sim.RunAll();
  // A prompt that is exactly 4 blocks leaves its last token to compute.
  auto d = MakeSeq(4, 16);
  d.salt = RootBlockHash("tenant-a");
  sim.Add(std::move(d), 1);
  out = sim.Step();
  EXPECT_EQ(out.chunks[0].pos_begin, 12);
  sim.RunAll();
  auto st = sim.sched.stats();
  EXPECT_EQ(st.prefix_query_tokens, 18 + 18 + 18 + 16);
  EXPECT_EQ(st.prefix_hit_tokens, 16 + 12);
}

// A request that finishes in the step that computed its last prompt chunk
// (max_tokens 1: classification, scoring) still leaves its blocks cached.
TEST(SchedulerTest, PrefixCacheKeepsTheBlocksOfARequestFinishedInItsLastChunk) {
  SchedulerOptions o = Opts(64, 4, 4);
  o.prefix_cache = true;
  Sim sim(o, 64);
  auto a = MakeSeq(1, 30);
  a.salt = RootBlockHash("t");
  sim.Add(std::move(a), 1);
  sim.RunAll();
  auto b = MakeSeq(2, 30);
  b.salt = RootBlockHash("t");
  sim.Add(std::move(b), 1);
  const auto out = sim.Step();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].pos_begin, 28);  // 7 full blocks of 30
  sim.RunAll();
}

TEST(SchedulerTest, KvWasteIsReported) {
  Sim sim(Opts(64, 8, 16), 256);
  for (int i = 1; i <= 8; ++i) sim.Add(MakeSeq(i, 100 + i, Priority::kInteractive, 0.001 * i), 64);
  sim.RunAll();
  const double w = sim.sched.stats().kv_waste_ratio;
  EXPECT_GT(w, 0.0);
  EXPECT_LT(w, 0.1);
}

TEST(SchedulerTest, DrainRateFromFinishedRequests) {
  Sim sim(Opts(64, 8), 64);
  for (int i = 1; i <= 4; ++i) sim.Add(MakeSeq(i, 3), 5);
  sim.RunAll();
  EXPECT_GT(sim.sched.FinishedPerSecond(sim.now), 0.0);
  EXPECT_GT(sim.sched.TokensPerSecond(sim.now), 0.0);
  EXPECT_EQ(sim.sched.FinishedPerSecond(sim.now + 100), 0.0);
}

}  // namespace
}  // namespace brisk
