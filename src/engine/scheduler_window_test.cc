// Sliding-window paging in the scheduler (scheduler_window.cc), no model:
// pages in use follow the formula, the blocks a step's local layers read
// always hold their local pages (scheduler_test_sim.h checks it every step),
// and prefix caching, forks and preemption keep their accounting.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/scheduler.h"
#include "engine/scheduler_test_sim.h"

namespace brisk {
namespace {

using namespace scheduler_test;

SchedulerOptions WindowOpts(int budget, int bs, int window) {
  SchedulerOptions o = Opts(budget, 16, bs);
  o.sliding_window = window;
  return o;
}

// Gemma 3 270M at 16k: 3 global layers in pages of 3, 15 local layers in 5
// groups of 3, window 512, blocks of 16, chunks of 512. After the prompt,
// in layer-blocks: global layers x context + local layers x window.
TEST(SchedulerWindowTest, PagesInUseAtLongContextFollowTheFormula) {
  constexpr int kCtx = 16384, kWindow = 512, kBs = 16, kGroups = 5, kPageLayers = 3;
  Sim sim(WindowOpts(512, kBs, kWindow), 8000, kGroups);
  sim.Add(MakeSeq(1, kCtx), 4);
  int64_t peak = 0;
  while (sim.sched.Find(1)->num_computed < kCtx) {
    sim.Step();
    peak = std::max(peak, sim.pool.num_used());
  }
  const int64_t global_blocks = kCtx / kBs;     // 1024
  const int64_t window_blocks = kWindow / kBs;  // 32: positions 15873..16383 and the next
  EXPECT_EQ(sim.pool.num_used(), global_blocks + kGroups * window_blocks);
  const int64_t layer_blocks = sim.pool.num_used() * kPageLayers;
  EXPECT_EQ(layer_blocks, 3 * global_blocks + 15 * window_blocks);  // 3552, not 18 x 1024
  EXPECT_LE(peak, sim.sched.PagesFor(kCtx + 4));
  sim.RunAll();
}

TEST(SchedulerWindowTest, WithoutAWindowEveryBlockKeepsItsPages) {
  Sim sim(WindowOpts(64, 4, 0), 600, 2);
  sim.Add(MakeSeq(1, 300), 4);
  while (sim.sched.Find(1)->num_computed < 300) sim.Step();
  EXPECT_EQ(sim.pool.num_used(), 3 * 75);
  sim.RunAll();
}

TEST(SchedulerWindowTest, PrefixHitIsCutToWhereTheWindowIsHeld) {
  SchedulerOptions o = WindowOpts(64, 4, 16);
  o.prefix_cache = true;
  Sim sim(o, 400, 2);
  auto a = MakeSeq(1, 100);
  a.salt = RootBlockHash("t");
  sim.Add(std::move(a), 1);
  sim.RunAll();  // its blocks stay cached; only the last window's keep local pages
  // The same 100 tokens and more: the hit reaches the held window.
  auto b = MakeSeq(2, 120);
  b.salt = RootBlockHash("t");
  sim.Add(std::move(b), 1);
  const auto first = sim.Step();
  ASSERT_FALSE(first.chunks.empty());
  EXPECT_EQ(first.chunks[0].pos_begin, 100);  // all 25 blocks, their last window held
  sim.RunAll();
  // Only the first 60 tokens in common: their last window was given back,
  // so nothing of it can be used.
  auto c = MakeSeq(3, 60);
  c.tokens.push_back(7777);
  c.num_prompt = 61;
  c.salt = RootBlockHash("t");
  sim.Add(std::move(c), 1);
  const auto second = sim.Step();
  ASSERT_FALSE(second.chunks.empty());
  EXPECT_EQ(second.chunks[0].pos_begin, 0);
  sim.RunAll();
}

TEST(SchedulerWindowTest, ForksCopyTheirLocalPagesOnWrite) {
  Sim sim(WindowOpts(64, 4, 8), 200, 2);
  sim.Add(MakeSeq(1, 10), 5);
  auto out = sim.sched.Schedule(0);
  SeqResult r;
  r.id = 1;
  r.token = 7;
  r.forks = {{2, 8}};
  sim.max_gen[2] = 5;
  sim.outputs[1] = {7};
  sim.outputs[2] = {8};
  sim.sched.UpdateFromOutput(out, std::vector<SeqResult>{r});
  sim.CheckAccounting();
  out = sim.Step();
  EXPECT_EQ(out.block_copies.size(), 3u);  // the partial block and its two local pages
  sim.RunAll();
}

TEST(SchedulerWindowTest, RandomLoadWithForksPrefixCacheAndPreemption) {
  SchedulerOptions o = WindowOpts(40, 4, 12);
  o.prefix_cache = true;
  Sim sim(o, 150, 3);
  sim.fork_children = 1;
  std::mt19937 rng(5);
  int64_t next = 1;
  for (int step = 0; step < 3000; ++step) {
    if (rng() % 4 == 0 && next <= 120) {
      auto s = MakeSeq(next, 1 + rng() % 60, Priority::kInteractive, sim.now,
                       static_cast<int>(rng() % 2) * 5);
      s.salt = RootBlockHash("s");
      sim.Add(std::move(s), 1 + rng() % 30);
      ++next;
    }
    sim.Step();
  }
  sim.RunAll();
  EXPECT_GT(sim.sched.stats().preemptions, 0);
  EXPECT_GT(sim.sched.stats().prefix_hit_tokens, 0);
}

// The outputs (made up from each sequence's tokens) are the same with and
// without paging, under preemption.
TEST(SchedulerWindowTest, OutputsUnchangedByPaging) {
  std::map<int64_t, std::vector<int32_t>> outputs[2];
  for (int paged = 0; paged < 2; ++paged) {
    Sim sim(WindowOpts(32, 4, paged ? 8 : 0), paged ? 60 : 20, paged ? 2 : 0);
    for (int64_t id = 1; id <= 6; ++id)
      sim.Add(MakeSeq(id, 10 + static_cast<int>(id), Priority::kInteractive, 0.001 * id, 100 * id),
              24);
    sim.RunAll();
    EXPECT_GT(sim.sched.stats().preemptions, 0);
    outputs[paged] = sim.outputs;
  }
  EXPECT_EQ(outputs[0], outputs[1]);
}

}  // namespace
}  // namespace brisk
