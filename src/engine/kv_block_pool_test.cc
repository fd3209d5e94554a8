#include "engine/kv_block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
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
