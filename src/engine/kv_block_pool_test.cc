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

TEST(KvBlockPoolTest, LocalPagesComeWithTheirBlockAndGoBackOnDrop) {
  KvBlockPool pool(12, 2);  // every block takes 3 pages while it has its locals
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(3, &a));
  EXPECT_EQ(pool.num_used(), 9);
  std::set<int32_t> pages(a.begin(), a.end());
  for (int32_t b : a) {
    ASSERT_EQ(pool.Locals(b).size(), 2u);
    pages.insert(pool.Locals(b).begin(), pool.Locals(b).end());
  }
  EXPECT_EQ(pages.size(), 9u);  // all distinct
  std::vector<int32_t> none;
  EXPECT_FALSE(pool.Allocate(2, &none));  // 6 pages, 3 free
  EXPECT_TRUE(none.empty());
  pool.DropLocals(a[0]);  // the window has left it
  EXPECT_TRUE(pool.Locals(a[0]).empty());
  EXPECT_EQ(pool.num_used(), 7);
  ASSERT_TRUE(pool.Allocate(1, &none));
  EXPECT_EQ(pool.num_used(), 10);
  pool.ReleaseTable(a);
  pool.Release(none);
  EXPECT_EQ(pool.num_used(), 0);
  EXPECT_EQ(pool.num_free(), 12);
  EXPECT_EQ(pool.high_water(), 10);
}

TEST(KvBlockPoolTest, KeptBlockKeepsItsLocalPagesUntilEvicted) {
  KvBlockPool pool(9, 2);
  EvenKeeper keeper;
  pool.set_keeper(&keeper);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(3, &a));
  EXPECT_EQ(a[0], 0);  // block 0 (kept when released), its locals 1 and 2
  pool.DropLocals(a[2]);
  pool.ReleaseTable(a);
  EXPECT_EQ(pool.num_used(), 0);
  int64_t kept_pages = 0;
  for (int32_t b : keeper.kept) kept_pages += 1 + static_cast<int64_t>(pool.Locals(b).size());
  EXPECT_EQ(pool.num_kept(), kept_pages);
  EXPECT_GT(kept_pages, 0);
  // Taking every page evicts every kept block, their local pages with them.
  std::vector<int32_t> b;
  ASSERT_TRUE(pool.Allocate(3, &b));
  EXPECT_EQ(pool.num_kept(), 0);
  EXPECT_EQ(pool.num_free(), 0);
  std::set<int32_t> pages(b.begin(), b.end());
  for (int32_t x : b) pages.insert(pool.Locals(x).begin(), pool.Locals(x).end());
  EXPECT_EQ(pages.size(), 9u);
  pool.ReleaseTable(b);
  keeper.kept.clear();
  for (int32_t x : b)
    if (x % 2 == 0) pool.ReturnKept(x);
  EXPECT_EQ(pool.num_kept(), 0);
  EXPECT_EQ(pool.num_free(), 9);
  pool.set_keeper(nullptr);
}

}  // namespace
}  // namespace brisk
