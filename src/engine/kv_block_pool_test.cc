#include "engine/kv_block_pool.h"

#include <gtest/gtest.h>

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

// A keeper that keeps even-numbered blocks and gives them up oldest first.
class EvenKeeper final : public KvBlockPool::BlockKeeper {
 public:
  bool Keep(int32_t block) override {
    if (block % 2) return false;
    kept.push_back(block);
    return true;
  }
  int32_t Evict() override {
    const int32_t b = kept.front();
    kept.erase(kept.begin());
    ++evictions;
    return b;
  }
  std::vector<int32_t> kept;
  int evictions = 0;
};

TEST(KvBlockPoolTest, KeptBlocksAreFreeButReusedLastInKeeperOrder) {
  KvBlockPool pool(4);
  EvenKeeper keeper;
  pool.set_keeper(&keeper);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(4, &a));
  EXPECT_EQ(a, (std::vector<int32_t>{0, 1, 2, 3}));
  pool.ReleaseTable(a);  // 3, 2, 1, 0: keeps 2 then 0
  EXPECT_EQ(keeper.kept, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_EQ(pool.num_kept(), 2);
  EXPECT_EQ(pool.num_used(), 0);
  // Clean blocks first (most recently released first), then the keeper's choice.
  std::vector<int32_t> b;
  ASSERT_TRUE(pool.Allocate(3, &b));
  EXPECT_EQ(b, (std::vector<int32_t>{1, 3, 2}));
  EXPECT_EQ(keeper.evictions, 1);
  EXPECT_EQ(pool.num_kept(), 1);
  // A kept block revived by its keeper is used with one reference.
  keeper.kept.clear();
  pool.ReviveKept(0);
  EXPECT_EQ(pool.RefCount(0), 1);
  EXPECT_EQ(pool.num_free(), 0);
  std::vector<int32_t> none;
  EXPECT_FALSE(pool.Allocate(1, &none));
  EXPECT_TRUE(none.empty());
  // A block returned by the keeper is an ordinary free block.
  pool.Release(std::vector<int32_t>{0});
  ASSERT_EQ(keeper.kept, (std::vector<int32_t>{0}));
  keeper.kept.clear();
  pool.ReturnKept(0);
  EXPECT_EQ(pool.num_kept(), 0);
  EXPECT_EQ(pool.num_free(), 1);
  ASSERT_TRUE(pool.Allocate(1, &none));
  EXPECT_EQ(none, (std::vector<int32_t>{0}));
  EXPECT_EQ(keeper.evictions, 1);
  pool.set_keeper(nullptr);
}

}  // namespace
}  // namespace brisk
