// The scheduler over a tier under its prefix cache (engine/kv_tier.h), no
// model: a scripted tier that remembers what the cache evicted. Blocks found
// there are loaded into new blocks on admission and computing starts after
// them; a failed load is computed instead; the pool's accounting holds
// throughout (scheduler_test_sim.h checks it every step).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "engine/kv_tier.h"
#include "engine/scheduler.h"
#include "engine/scheduler_test_sim.h"

namespace brisk {
namespace {

using namespace scheduler_test;

struct HashLess {
  bool operator()(const BlockHash& a, const BlockHash& b) const {
    return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
  }
};

// Remembers each offered block's hash and whether it had its local pages;
// Load fails for hashes in `broken`.
class ScriptedTier final : public KvTier {
 public:
  int32_t Match(std::span<const BlockHash> hashes) override {
    int32_t n = 0;
    for (const BlockHash& h : hashes) {
      if (!held.count(h)) break;
      ++n;
    }
    return n;
  }
  Loaded Load(const BlockHash& h, int32_t block, std::span<const int32_t> locals) override {
    ++loads;
    auto it = held.find(h);
    if (it == held.end() || broken.count(h)) return Loaded::kNone;
    return it->second && !locals.empty() ? Loaded::kAll : Loaded::kGlobal;
  }
  void Offer(const BlockHash& h, int32_t block, std::span<const int32_t> locals) override {
    ++offered;
    bool& with_locals = held[h];
    with_locals = with_locals || !locals.empty();
  }

  std::map<BlockHash, bool, HashLess> held;  // hash -> stored with its local pages
  std::set<BlockHash, HashLess> broken;
  int loads = 0, offered = 0;
};

SchedulerOptions CacheOpts(int budget = 64, int bs = 4) {
  SchedulerOptions o = Opts(budget, 16, bs);
  o.prefix_cache = true;
  return o;
}

SeqState Prompt(int64_t id, int n, int first_token, std::string_view salt = "t") {
  SeqState s = MakeSeq(id, n, Priority::kInteractive, 0, first_token);
  s.salt = RootBlockHash(salt);
  return s;
}

// Runs sequence `id` alone to the end, and returns the computed count it was
// admitted with (what the caches gave it).
int32_t AdmittedAt(Sim& sim, SeqState s, int gen = 2) {
  const int64_t id = s.id;
  sim.Add(std::move(s), gen);
  sim.Step();
  const SeqState* st = sim.sched.Find(id);
  const int32_t at = st ? st->num_computed : -1;
  sim.RunAll();
  return at;
}

TEST(SchedulerTierTest, BlocksTheCacheEvictedAreLoadedInsteadOfComputed) {
  Sim sim(CacheOpts(), 30);  // 30 blocks of 4: one 100-token prompt at a time
  ScriptedTier tier;
  sim.sched.SetKvTier(&tier);
  sim.Add(Prompt(1, 100, 0), 1);
  sim.RunAll();
  EXPECT_EQ(tier.offered, 25);       // each full block, as it was published
  sim.Add(Prompt(2, 100, 5000), 1);  // another prompt takes the pool
  sim.RunAll();
  EXPECT_GE(tier.offered, 25 + 25 + 20);  // its blocks, and the first's again as they go
  std::vector<BlockHash> h;
  sim.sched.prefix_cache().HashFullBlocks(RootBlockHash("t"), Prompt(1, 100, 0).tokens, &h);
  const int32_t in_ram = sim.sched.prefix_cache().MatchPrefix(h);
  ASSERT_EQ(tier.Match(std::span(h).subspan(static_cast<size_t>(in_ram))), 25 - in_ram);

  // The first prompt again: the RAM cache lost its head, the tier has it.
  const SchedulerStats before = sim.sched.stats();
  sim.Add(Prompt(3, 101, 0), 2);
  sim.Step();
  const SeqState* s = sim.sched.Find(3);
  ASSERT_NE(s, nullptr);
  const SchedulerStats after = sim.sched.stats();
  const int64_t ram = after.prefix_ram_hit_blocks - before.prefix_ram_hit_blocks;
  const int64_t disk = after.prefix_disk_hit_blocks - before.prefix_disk_hit_blocks;
  EXPECT_GT(disk, 0);
  EXPECT_EQ(ram + disk, 25);  // every full block of the 100 tokens, from one tier or the other
  EXPECT_EQ(after.prefix_disk_hit_tokens - before.prefix_disk_hit_tokens, disk * 4);
  EXPECT_EQ(after.prefix_ram_hit_tokens - before.prefix_ram_hit_tokens, ram * 4);
  // Only the last token was computed, in the step that admitted it.
  EXPECT_EQ(s->num_computed, 101);
  // Loaded blocks are published: the RAM cache holds them again.
  EXPECT_EQ(s->num_published, 25);
  for (int i = 0; i < 25; ++i)
    EXPECT_EQ(sim.sched.prefix_cache().Lookup(s->block_hashes[i]), s->blocks[i]) << i;
  sim.RunAll();
}

TEST(SchedulerTierTest, AFailedLoadIsComputedFromThere) {
  Sim sim(CacheOpts(), 30);
  ScriptedTier tier;
  sim.sched.SetKvTier(&tier);
  sim.Add(Prompt(1, 100, 0), 1);
  sim.RunAll();
  sim.Add(Prompt(2, 100, 5000), 1);
  sim.RunAll();
  std::vector<BlockHash> h;
  sim.sched.prefix_cache().HashFullBlocks(RootBlockHash("t"), Prompt(1, 100, 0).tokens, &h);
  const int32_t in_ram = sim.sched.prefix_cache().MatchPrefix(h);
  ASSERT_LT(in_ram + 3, 25);
  ASSERT_GE(tier.Match(std::span(h).subspan(static_cast<size_t>(in_ram))), 3);
  tier.broken.insert(h[static_cast<size_t>(in_ram) + 2]);  // the third block after the RAM hit
  sim.Add(Prompt(3, 100, 0), 1);
  sim.Step();
  const SeqState* s = sim.sched.Find(3);
  ASSERT_NE(s, nullptr);
  // Two blocks loaded, then computing resumed at the broken one (the step's
  // chunk started there: the simulator checks pos_begin == num_computed).
  EXPECT_EQ(sim.sched.stats().prefix_disk_hit_blocks, 2);
  EXPECT_GT(s->num_computed, (in_ram + 2) * 4);
  sim.RunAll();
  EXPECT_EQ(sim.pool.num_used(), 0);
}

TEST(SchedulerTierTest, ATierHitNeverPreemptsAnyone) {
  Sim sim(CacheOpts(8), 30);
  ScriptedTier tier;
  sim.sched.SetKvTier(&tier);
  sim.Add(Prompt(1, 100, 0), 1);
  sim.RunAll();
  sim.Add(Prompt(2, 100, 5000), 1);
  sim.RunAll();
  // A sequence ranked above the next one holds most of the pool.
  sim.Add(Prompt(4, 80, 9000, "u"), 8);
  while (sim.sched.Find(4)->num_computed < 80) sim.Step();
  const int64_t free_blocks = sim.pool.num_free();
  ASSERT_LT(free_blocks, 11);
  SeqState later = Prompt(3, 100, 0);
  later.arrival_s = 1;
  sim.Add(std::move(later), 1);
  sim.Step();
  EXPECT_EQ(sim.sched.stats().preemptions, 0);
  EXPECT_GT(sim.sched.stats().prefix_disk_hit_blocks, 0);
  EXPECT_LE(sim.sched.stats().prefix_disk_hit_blocks, free_blocks);
  sim.RunAll();
}

TEST(SchedulerTierTest, SlidingWindowBlocksBeforeTheWindowComeBackWithoutLocalPages) {
  SchedulerOptions o = CacheOpts(64, 4);
  o.sliding_window = 16;
  Sim sim(o, 80, 2);  // one prompt's pages at a time
  ScriptedTier tier;
  sim.sched.SetKvTier(&tier);
  sim.Add(Prompt(1, 100, 0), 1);
  sim.RunAll();
  sim.Add(Prompt(2, 140, 5000), 1);
  sim.RunAll();
  // Offered as they were published: every block still had its local pages.
  for (const auto& [hash, locals] : tier.held) EXPECT_TRUE(locals);
  sim.Add(Prompt(3, 101, 0), 2);
  sim.Step();  // the simulator checks that every block the local layers read holds its pages
  const SeqState* s = sim.sched.Find(3);
  ASSERT_NE(s, nullptr);
  EXPECT_GT(sim.sched.stats().prefix_disk_hit_blocks, 0);
  EXPECT_EQ(s->num_computed, 101);
  // Resumed at 100: the local layers need positions 85.. (blocks 21..24);
  // every block before holds only its own page.
  for (size_t i = 0; i < 21; ++i) EXPECT_TRUE(sim.pool.Locals(s->blocks[i]).empty()) << i;
  EXPECT_LE(sim.pool.num_used(), sim.sched.PagesFor(102));
  sim.RunAll();
}

TEST(SchedulerTierTest, NoTierNoChange) {
  Sim sim(CacheOpts(), 30);
  EXPECT_EQ(AdmittedAt(sim, Prompt(1, 100, 0)), 64);  // the first chunk of 64
  EXPECT_EQ(AdmittedAt(sim, Prompt(2, 100, 0)), 100);
  EXPECT_EQ(sim.sched.stats().prefix_disk_hit_blocks, 0);
  EXPECT_EQ(sim.sched.stats().prefix_ram_hit_blocks, 24);
}

}  // namespace
}  // namespace brisk
