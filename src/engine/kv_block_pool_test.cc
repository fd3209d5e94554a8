#include "engine/kv_block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace brisk {
namespace {

TEST(KvBlockPoolTest, AllocateAllOrNothing) {
  KvBlockPool pool(4);
  std::vector<int32_t> a;
  EXPECT_TRUE(pool.Allocate(3, &a));
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(pool.num_free(), 1);
  std::vector<int32_t> b;
  EXPECT_FALSE(pool.Allocate(2, &b));
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(pool.num_free(), 1);
  pool.Release(a);
  EXPECT_EQ(pool.num_free(), 4);
}

TEST(KvBlockPoolTest, SharedBlocksFreeOnLastRelease) {
  KvBlockPool pool(2);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(1, &a));
  pool.Ref(a[0]);
  EXPECT_EQ(pool.RefCount(a[0]), 2);
  pool.Release(a);
  EXPECT_EQ(pool.num_free(), 1);
  pool.Release(a);
  EXPECT_EQ(pool.num_free(), 2);
}

TEST(KvBlockPoolTest, RandomOpsKeepAccountingInvariant) {
  KvBlockPool pool(64);
  std::mt19937 rng(7);
  std::vector<std::vector<int32_t>> owners;
  for (int step = 0; step < 5000; ++step) {
    if (owners.empty() || rng() % 2) {
      std::vector<int32_t> got;
      int n = rng() % 8;
      if (pool.Allocate(n, &got)) owners.push_back(got);
    } else {
      size_t i = rng() % owners.size();
      pool.Release(owners[i]);
      owners.erase(owners.begin() + i);
    }
    std::set<int32_t> held;
    for (auto& o : owners) held.insert(o.begin(), o.end());
    ASSERT_EQ(static_cast<int64_t>(held.size()), pool.num_used());
    ASSERT_EQ(pool.num_used() + pool.num_free(), pool.num_blocks());
  }
}

}  // namespace
}  // namespace brisk

namespace brisk {
namespace {

std::vector<int32_t> Toks(int a, int n) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = a + i;
  return t;
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

TEST(KvBlockPoolTest, PublishedBlockSurvivesReleaseUntilReused) {
  KvBlockPool pool(3);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(1, &a));
  const BlockHash h = ChainBlockHash(RootBlockHash(""), Toks(5, 4));
  pool.Publish(a[0], h);
  EXPECT_EQ(pool.Lookup(h), a[0]);
  pool.Release(a);
  EXPECT_EQ(pool.num_free(), 3);
  EXPECT_EQ(pool.num_cached(), 1);
  // Acquire takes it off the free list with one reference.
  EXPECT_EQ(pool.Acquire(h), a[0]);
  EXPECT_EQ(pool.RefCount(a[0]), 1);
  EXPECT_EQ(pool.num_free(), 2);
  pool.Release(a);
  // Never-cached blocks are reused before cached ones; then the cached block is evicted.
  std::vector<int32_t> b;
  ASSERT_TRUE(pool.Allocate(2, &b));
  EXPECT_EQ(std::count(b.begin(), b.end(), a[0]), 0);
  EXPECT_EQ(pool.Lookup(h), a[0]);
  ASSERT_TRUE(pool.Allocate(1, &b));
  EXPECT_EQ(b.back(), a[0]);
  EXPECT_EQ(pool.Lookup(h), -1);
  EXPECT_EQ(pool.num_cached(), 0);
}

TEST(KvBlockPoolTest, EvictsLeastRecentlyReleasedAndTailBeforeHead) {
  KvBlockPool pool(4);
  BlockHash parent = RootBlockHash("");
  std::vector<int32_t> seq;
  ASSERT_TRUE(pool.Allocate(3, &seq));
  std::vector<BlockHash> hs;
  for (int i = 0; i < 3; ++i) {
    parent = ChainBlockHash(parent, Toks(i * 16, 16));
    hs.push_back(parent);
    pool.Publish(seq[i], parent);
  }
  pool.ReleaseTable(seq);  // tail first: block 2 is evicted before 1, 1 before 0
  std::vector<int32_t> got;
  ASSERT_TRUE(pool.Allocate(1, &got));  // the never-cached block
  EXPECT_EQ(pool.num_cached(), 3);
  ASSERT_TRUE(pool.Allocate(1, &got));
  EXPECT_EQ(got.back(), seq[2]);
  EXPECT_EQ(pool.Lookup(hs[0]), seq[0]);
  EXPECT_EQ(pool.Lookup(hs[1]), seq[1]);
  EXPECT_EQ(pool.Lookup(hs[2]), -1);
  // Touching the head makes it most recent: block 1 goes next.
  ASSERT_EQ(pool.Acquire(hs[0]), seq[0]);
  pool.Release(std::vector<int32_t>{seq[0]});
  ASSERT_TRUE(pool.Allocate(1, &got));
  EXPECT_EQ(got.back(), seq[1]);
}

TEST(KvBlockPoolTest, DuplicateHashKeepsFirstOwner) {
  KvBlockPool pool(2);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(2, &a));
  const BlockHash h = RootBlockHash("x");
  pool.Publish(a[0], h);
  pool.Publish(a[1], h);
  EXPECT_EQ(pool.Lookup(h), a[0]);
  EXPECT_FALSE(pool.IsCached(a[1]));
  EXPECT_EQ(pool.num_cached(), 1);
}

TEST(KvBlockPoolTest, RandomPrefixOpsKeepInvariants) {
  KvBlockPool pool(32);
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
      pool.Publish(owners.back()[rng() % owners.back().size()], h);
      published.push_back(h);
    } else if (op == 3 && !published.empty()) {
      int32_t b = pool.Acquire(published[rng() % published.size()]);
      if (b >= 0) owners.push_back({b});
    }
    std::map<int32_t, int> refs;
    for (auto& o : owners)
      for (int32_t b : o) ++refs[b];
    ASSERT_EQ(static_cast<int64_t>(refs.size()), pool.num_used());
    for (auto& [b, n] : refs) ASSERT_EQ(pool.RefCount(b), n);
    ASSERT_EQ(pool.num_used() + pool.num_free(), pool.num_blocks());
    for (const auto& h : published) {
      int32_t b = pool.Lookup(h);
      if (b >= 0) {
        ASSERT_TRUE(pool.IsCached(b));
      }
    }
  }
}

}  // namespace
}  // namespace brisk
