// The prefix cache alone, over a KvBlockPool: no model, no scheduler.
#include "engine/prefix_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

namespace brisk {
namespace {

constexpr int kBs = 4;  // block size in these tests

std::vector<int32_t> Toks(int a, int n) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = a + i;
  return t;
}

// A sequence as the scheduler drives it: hashes of its full blocks, and a
// block table.
struct Seq {
  std::vector<int32_t> tokens;
  std::vector<BlockHash> hashes;
  std::vector<int32_t> blocks;
};

Seq MakeSeq(const PrefixCache& cache, std::string_view salt, std::vector<int32_t> tokens) {
  Seq s;
  s.tokens = std::move(tokens);
  cache.HashFullBlocks(RootBlockHash(salt), s.tokens, &s.hashes);
  return s;
}

// Allocates blocks for all of s's tokens and publishes the full ones, as if
// they had been computed.
void ComputeAndPublish(KvBlockPool& pool, PrefixCache& cache, Seq& s) {
  const int64_t need = (static_cast<int64_t>(s.tokens.size()) + kBs - 1) / kBs;
  ASSERT_TRUE(pool.Allocate(need - static_cast<int64_t>(s.blocks.size()), &s.blocks));
  for (size_t i = 0; i < s.hashes.size(); ++i) cache.Publish(s.blocks[i], s.hashes[i]);
}

TEST(BlockHashTest, ChainsOverParentAndTokens) {
  const BlockHash root = RootBlockHash("tenant-a");
  EXPECT_EQ(root, RootBlockHash("tenant-a"));
  EXPECT_FALSE(root == RootBlockHash("tenant-b"));
  const BlockHash h1 = ChainBlockHash(root, Toks(0, 16));
  EXPECT_EQ(h1, ChainBlockHash(root, Toks(0, 16)));
  EXPECT_FALSE(h1 == ChainBlockHash(root, Toks(1, 16)));
  // Same tokens under a different parent (or salt) hash differently.
  EXPECT_FALSE(ChainBlockHash(h1, Toks(0, 16)) == h1);
  EXPECT_FALSE(ChainBlockHash(RootBlockHash("tenant-b"), Toks(0, 16)) == h1);
}

TEST(PrefixCacheTest, HashesFullBlocksOnlyAndExtendsIncrementally) {
  KvBlockPool pool(4);
  PrefixCache cache(&pool, kBs);
  const std::vector<int32_t> toks = Toks(0, 11);
  std::vector<BlockHash> all;
  cache.HashFullBlocks(RootBlockHash("s"), toks, &all);
  ASSERT_EQ(all.size(), 2u);  // the partial third block has no hash
  EXPECT_EQ(all[0], ChainBlockHash(RootBlockHash("s"), Toks(0, 4)));
  EXPECT_EQ(all[1], ChainBlockHash(all[0], Toks(4, 4)));
  std::vector<BlockHash> grown;
  for (size_t n = 0; n <= toks.size(); ++n)
    cache.HashFullBlocks(RootBlockHash("s"), std::span<const int32_t>(toks).first(n), &grown);
  EXPECT_EQ(grown, all);
}

TEST(PrefixCacheTest, FindsLongestCachedPrefix) {
  KvBlockPool pool(16);
  PrefixCache cache(&pool, kBs);
  Seq a = MakeSeq(cache, "", Toks(0, 14));  // 3 full blocks + 2 tokens
  ComputeAndPublish(pool, cache, a);
  EXPECT_EQ(cache.num_cached(), 3);
  // Full match, with or without a different tail after the full blocks.
  EXPECT_EQ(cache.MatchPrefix(MakeSeq(cache, "", Toks(0, 12)).hashes), 3);
  std::vector<int32_t> longer = Toks(0, 12);
  longer.insert(longer.end(), {99, 98, 97, 96, 95});
  EXPECT_EQ(cache.MatchPrefix(MakeSeq(cache, "", longer).hashes), 3);
  // Diverging in the third block: the first two match.
  std::vector<int32_t> diverge = Toks(0, 12);
  diverge[9] = 500;
  EXPECT_EQ(cache.MatchPrefix(MakeSeq(cache, "", diverge).hashes), 2);
  // Diverging in the first block: nothing, even though later blocks are equal.
  diverge = Toks(0, 12);
  diverge[0] = 500;
  EXPECT_EQ(cache.MatchPrefix(MakeSeq(cache, "", diverge).hashes), 0);
  // Shorter than a block: nothing to look up.
  EXPECT_EQ(cache.MatchPrefix(MakeSeq(cache, "", Toks(0, 3)).hashes), 0);
  // Lookup finds the blocks a's table holds.
  for (size_t i = 0; i < a.hashes.size(); ++i) {
    EXPECT_EQ(cache.Lookup(a.hashes[i]), a.blocks[i]);
    EXPECT_TRUE(cache.IsCached(a.blocks[i]));
  }
  EXPECT_FALSE(cache.IsCached(a.blocks[3]));  // the partial block
}

TEST(PrefixCacheTest, SaltsIsolateTenants) {
  KvBlockPool pool(16);
  PrefixCache cache(&pool, kBs);
  Seq a = MakeSeq(cache, "tenant-a", Toks(0, 8));
  ComputeAndPublish(pool, cache, a);
  EXPECT_EQ(cache.MatchPrefix(MakeSeq(cache, "tenant-a", Toks(0, 8)).hashes), 2);
  EXPECT_EQ(cache.MatchPrefix(MakeSeq(cache, "tenant-b", Toks(0, 8)).hashes), 0);
  EXPECT_EQ(cache.MatchPrefix(MakeSeq(cache, "", Toks(0, 8)).hashes), 0);
  // The other tenant computes the same tokens into blocks of its own.
  Seq b = MakeSeq(cache, "tenant-b", Toks(0, 8));
  ComputeAndPublish(pool, cache, b);
  EXPECT_EQ(cache.num_cached(), 4);
  std::vector<int32_t> got;
  EXPECT_EQ(cache.AcquirePrefix(b.hashes, &got), 2);
  EXPECT_EQ(got, b.blocks);
  for (int32_t blk : got) EXPECT_EQ(std::count(a.blocks.begin(), a.blocks.end(), blk), 0);
}

TEST(PrefixCacheTest, HitsTakeReferences) {
  KvBlockPool pool(8);
  PrefixCache cache(&pool, kBs);
  Seq a = MakeSeq(cache, "", Toks(0, 8));
  ComputeAndPublish(pool, cache, a);
  // A hit on blocks in use shares them.
  Seq b = MakeSeq(cache, "", Toks(0, 8));
  EXPECT_EQ(cache.AcquirePrefix(b.hashes, &b.blocks), 2);
  EXPECT_EQ(b.blocks, a.blocks);
  EXPECT_EQ(pool.RefCount(a.blocks[0]), 2);
  EXPECT_EQ(pool.num_used(), 2);
  pool.ReleaseTable(a.blocks);
  EXPECT_EQ(pool.RefCount(b.blocks[0]), 1);
  EXPECT_EQ(cache.num_free_cached(), 0);
  // The last owner lets go: free, but still cached.
  pool.ReleaseTable(b.blocks);
  EXPECT_EQ(pool.num_used(), 0);
  EXPECT_EQ(pool.num_free(), 8);
  EXPECT_EQ(pool.num_kept(), 2);
  EXPECT_EQ(cache.num_free_cached(), 2);
  EXPECT_EQ(cache.num_cached(), 2);
  // A hit on a free cached block takes it back into use with one reference.
  std::vector<int32_t> c;
  EXPECT_EQ(cache.AcquirePrefix(std::span<const BlockHash>(a.hashes).first(1), &c), 1);
  EXPECT_EQ(c[0], a.blocks[0]);
  EXPECT_EQ(pool.RefCount(c[0]), 1);
  EXPECT_EQ(pool.num_used(), 1);
  EXPECT_EQ(cache.num_free_cached(), 1);
  // A miss takes nothing.
  std::vector<int32_t> d;
  EXPECT_EQ(cache.AcquirePrefix(MakeSeq(cache, "x", Toks(0, 8)).hashes, &d), 0);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(pool.num_used(), 1);
  pool.ReleaseTable(c);
}

TEST(PrefixCacheTest, EvictsLeastRecentlyReleasedTailBeforeHeadAfterUncached) {
  KvBlockPool pool(4);
  PrefixCache cache(&pool, kBs);
  Seq a = MakeSeq(cache, "", Toks(0, 12));
  ComputeAndPublish(pool, cache, a);  // 3 blocks, all full
  pool.ReleaseTable(a.blocks);        // tail first: block 2 is evicted before 1, 1 before 0
  std::vector<int32_t> got;
  ASSERT_TRUE(pool.Allocate(1, &got));  // the never-cached block goes first
  EXPECT_EQ(std::count(a.blocks.begin(), a.blocks.end(), got.back()), 0);
  EXPECT_EQ(cache.num_cached(), 3);
  ASSERT_TRUE(pool.Allocate(1, &got));
  EXPECT_EQ(got.back(), a.blocks[2]);
  EXPECT_EQ(cache.Lookup(a.hashes[0]), a.blocks[0]);
  EXPECT_EQ(cache.Lookup(a.hashes[1]), a.blocks[1]);
  EXPECT_EQ(cache.Lookup(a.hashes[2]), -1);
  // Touching the head makes it most recent: block 1 goes next.
  std::vector<int32_t> head;
  ASSERT_EQ(cache.AcquirePrefix(std::span<const BlockHash>(a.hashes).first(1), &head), 1);
  pool.Release(head);
  ASSERT_TRUE(pool.Allocate(1, &got));
  EXPECT_EQ(got.back(), a.blocks[1]);
  ASSERT_TRUE(pool.Allocate(1, &got));
  EXPECT_EQ(got.back(), a.blocks[0]);
  EXPECT_EQ(cache.num_cached(), 0);
  EXPECT_EQ(pool.num_free(), 0);
}

TEST(PrefixCacheTest, BlockReusedAfterEvictionLosesItsHash) {
  KvBlockPool pool(1);
  PrefixCache cache(&pool, kBs);
  Seq a = MakeSeq(cache, "", Toks(0, 4));
  ComputeAndPublish(pool, cache, a);
  const int32_t blk = a.blocks[0];
  pool.ReleaseTable(a.blocks);
  EXPECT_EQ(cache.Lookup(a.hashes[0]), blk);
  // The pool's only block is evicted for other contents.
  Seq b = MakeSeq(cache, "", Toks(100, 4));
  ASSERT_TRUE(pool.Allocate(1, &b.blocks));
  ASSERT_EQ(b.blocks[0], blk);
  EXPECT_FALSE(cache.IsCached(blk));
  EXPECT_EQ(cache.Lookup(a.hashes[0]), -1);
  EXPECT_EQ(cache.MatchPrefix(a.hashes), 0);
  EXPECT_EQ(cache.num_cached(), 0);
  // Published under the new contents, it is found by them only.
  cache.Publish(blk, b.hashes[0]);
  EXPECT_EQ(cache.Lookup(b.hashes[0]), blk);
  EXPECT_EQ(cache.Lookup(a.hashes[0]), -1);
  pool.ReleaseTable(b.blocks);
}

TEST(PrefixCacheTest, DuplicateHashKeepsFirstOwnerAndBlockKeepsFirstHash) {
  KvBlockPool pool(2);
  PrefixCache cache(&pool, kBs);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(2, &a));
  const BlockHash h = RootBlockHash("x"), g = RootBlockHash("y");
  cache.Publish(a[0], h);
  cache.Publish(a[1], h);
  EXPECT_EQ(cache.Lookup(h), a[0]);
  EXPECT_FALSE(cache.IsCached(a[1]));
  cache.Publish(a[0], g);
  EXPECT_EQ(cache.Lookup(g), -1);
  EXPECT_EQ(cache.num_cached(), 1);
  // The private duplicate is not kept once free.
  pool.Release(std::vector<int32_t>{a[1]});
  EXPECT_EQ(pool.num_kept(), 0);
  pool.Release(std::vector<int32_t>{a[0]});
  EXPECT_EQ(pool.num_kept(), 1);
}

TEST(PrefixCacheTest, ClearAndDestructionReturnKeptBlocks) {
  KvBlockPool pool(4);
  {
    PrefixCache cache(&pool, kBs);
    Seq a = MakeSeq(cache, "", Toks(0, 8));
    ComputeAndPublish(pool, cache, a);
    pool.ReleaseTable(a.blocks);
    EXPECT_EQ(pool.num_kept(), 2);
    cache.Clear();
    EXPECT_EQ(pool.num_kept(), 0);
    EXPECT_EQ(pool.num_free(), 4);
    EXPECT_EQ(cache.num_cached(), 0);
    EXPECT_EQ(cache.MatchPrefix(a.hashes), 0);
    Seq b = MakeSeq(cache, "", Toks(0, 8));
    ComputeAndPublish(pool, cache, b);
    pool.ReleaseTable(b.blocks);
    EXPECT_EQ(pool.num_kept(), 2);
  }
  // The cache is gone: its blocks are ordinary free blocks of the pool.
  EXPECT_EQ(pool.num_kept(), 0);
  EXPECT_EQ(pool.num_free(), 4);
  std::vector<int32_t> all;
  ASSERT_TRUE(pool.Allocate(4, &all));
  pool.Release(all);
  EXPECT_EQ(pool.num_kept(), 0);
}

TEST(PrefixCacheTest, RandomOpsKeepInvariants) {
  KvBlockPool pool(32);
  PrefixCache cache(&pool, kBs);
  std::mt19937 rng(11);
  std::vector<std::vector<int32_t>> owners;
  std::vector<BlockHash> published;
  for (int step = 0; step < 20000; ++step) {
    const int op = rng() % 4;
    if (op == 0) {
      std::vector<int32_t> got;
      if (pool.Allocate(rng() % 5, &got)) owners.push_back(got);
    } else if (op == 1 && !owners.empty()) {
      size_t i = rng() % owners.size();
      pool.ReleaseTable(owners[i]);
      owners.erase(owners.begin() + i);
    } else if (op == 2 && !owners.empty() && !owners.back().empty()) {
      BlockHash h = ChainBlockHash(RootBlockHash(""), Toks(static_cast<int>(rng() % 50), 4));
      cache.Publish(owners.back()[rng() % owners.back().size()], h);
      published.push_back(h);
    } else if (op == 3 && !published.empty()) {
      std::vector<int32_t> got;
      const BlockHash h = published[rng() % published.size()];
      if (cache.AcquirePrefix(std::span<const BlockHash>(&h, 1), &got) == 1) owners.push_back(got);
    }
    std::map<int32_t, int> refs;
    for (auto& o : owners)
      for (int32_t b : o) ++refs[b];
    ASSERT_EQ(static_cast<int64_t>(refs.size()), pool.num_used());
    for (auto& [b, n] : refs) ASSERT_EQ(pool.RefCount(b), n);
    ASSERT_EQ(pool.num_used() + pool.num_free(), pool.num_blocks());
    ASSERT_EQ(pool.num_kept(), cache.num_free_cached());
    // Exactly the free blocks that hold a hash are kept.
    int64_t cached = 0, free_cached = 0;
    for (int32_t b = 0; b < pool.num_blocks(); ++b) {
      cached += cache.IsCached(b);
      free_cached += pool.RefCount(b) == 0 && cache.IsCached(b);
    }
    ASSERT_EQ(cached, cache.num_cached());
    ASSERT_EQ(free_cached, cache.num_free_cached());
    for (const auto& h : published) {
      const int32_t b = cache.Lookup(h);
      if (b >= 0) {
        ASSERT_TRUE(cache.IsCached(b));
      }
    }
  }
}

}  // namespace
}  // namespace brisk
