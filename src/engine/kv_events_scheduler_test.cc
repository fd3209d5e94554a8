// KV events under the scheduler's real traffic: random arrivals, forks,
// preemption, prefix-cache hits and evictions, with and without sliding-window
// paging. A subscriber's view built from the events alone must equal the
// prefix cache at every step, and every stored hash must recompute from its
// parent and tokens.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine/kv_events.h"
#include "engine/scheduler_test_sim.h"

namespace brisk {
namespace {

using scheduler_test::MakeSeq;
using scheduler_test::Opts;
using scheduler_test::Sim;

// What a subscriber knows: per group, the hashes held.
struct View {
  std::set<ExternalBlockHash> held[2];
  int64_t stores = 0, removals = 0, clears = 0;

  void Apply(const std::vector<KvEvent>& events, const ExternalBlockHasher& hasher, int bs) {
    for (const KvEvent& e : events) {
      auto& h = held[e.group];
      switch (e.type) {
        case KvEvent::Type::kBlockStored: {
          ASSERT_EQ(e.token_ids.size(), e.block_hashes.size() * static_cast<size_t>(bs));
          ExternalBlockHash parent = e.parent ? *e.parent : hasher.none_hash();
          for (size_t i = 0; i < e.block_hashes.size(); ++i) {
            const std::span<const int32_t> toks(e.token_ids.data() + i * bs,
                                                static_cast<size_t>(bs));
            EXPECT_EQ(hasher.Chain(parent, toks, e.salts[i]), e.block_hashes[i]);
            EXPECT_TRUE(h.insert(e.block_hashes[i]).second) << "stored twice";
            parent = e.block_hashes[i];
            ++stores;
          }
          break;
        }
        case KvEvent::Type::kBlockRemoved:
          for (const auto& x : e.block_hashes) {
            EXPECT_EQ(h.erase(x), 1u) << "removed a block never stored";
            ++removals;
          }
          break;
        case KvEvent::Type::kAllBlocksCleared:
          held[0].clear();
          held[1].clear();
          ++clears;
          break;
      }
    }
  }
};

void RunRandomLoad(int window, int locals, int64_t pages) {
  SchedulerOptions o = Opts(40, 6, 4);
  o.prefix_cache = true;
  o.sliding_window = window;
  // Before the scheduler, whose prefix cache clears into the log when it goes.
  const ExternalBlockHasher hasher("0");
  KvEventLog log(pages, o.block_size, window);
  Sim sim(o, pages, locals);
  sim.fork_children = 1;
  sim.sched.EnableKvEvents(&log, &hasher);
  View view;
  std::mt19937 rng(11);
  int64_t next = 1;
  auto check = [&] {
    view.Apply(log.Take(), hasher, o.block_size);
    const PrefixCache& cache = sim.sched.prefix_cache();
    int64_t with_locals = 0;
    for (int32_t b = 0; b < sim.pool.num_blocks(); ++b)
      with_locals += cache.IsCached(b) && !sim.pool.Locals(b).empty();
    ASSERT_EQ(static_cast<int64_t>(view.held[0].size()), cache.num_cached());
    ASSERT_EQ(static_cast<int64_t>(view.held[1].size()), window > 0 ? with_locals : 0);
  };
  for (int step = 0; step < 3000; ++step) {
    if (rng() % 4 == 0 && next <= 150) {
      // Two prompt families (shared prefixes) and two tenants (salts).
      auto s = MakeSeq(next, 1 + static_cast<int>(rng() % 60), Priority::kInteractive, sim.now,
                       static_cast<int>(rng() % 2) * 5);
      s.salt_text = rng() % 3 == 0 ? "tenant-b" : "";
      s.salt = RootBlockHash(s.salt_text);
      sim.Add(std::move(s), 1 + static_cast<int>(rng() % 30));
      ++next;
    }
    sim.Step();
    check();
  }
  sim.RunAll();
  check();
  EXPECT_GT(sim.sched.stats().preemptions, 0);
  EXPECT_GT(sim.sched.stats().prefix_hit_tokens, 0);
  EXPECT_GT(view.removals, 0);  // evictions were told
  EXPECT_GT(view.stores, view.removals);
}

TEST(KvEventsSchedulerTest, SubscriberViewEqualsThePrefixCacheUnderRandomLoad) {
  RunRandomLoad(0, 0, 60);
}

TEST(KvEventsSchedulerTest, SlidingWindowGroupFollowsLocalPages) { RunRandomLoad(12, 3, 150); }

}  // namespace
}  // namespace brisk
