#include "gateway/kv_block_index.h"

#include <gtest/gtest.h>

#include <random>

namespace brisk::gateway {
namespace {

using Keys = std::vector<KvBlockKey>;

TEST(KvBlockIndexTest, MatchIsEachReplicasLeadingRun) {
  KvBlockIndex index(3, 1000);
  index.Stored(0, Keys{1, 2, 3, 4});
  index.Stored(1, Keys{1, 2});
  index.Stored(2, Keys{2, 3});  // not a prefix of the prompt: no match
  EXPECT_EQ(index.MatchPrefix(Keys{1, 2, 3, 4, 5}), (std::vector<int32_t>{4, 2, 0}));
  EXPECT_EQ(index.MatchPrefix(Keys{9, 1, 2}), (std::vector<int32_t>{0, 0, 0}));
  index.Removed(0, Keys{3});
  EXPECT_EQ(index.MatchPrefix(Keys{1, 2, 3, 4}), (std::vector<int32_t>{2, 2, 0}));
  EXPECT_EQ(index.replica_blocks(0), 3);
  EXPECT_EQ(index.num_blocks(), 4);
}

TEST(KvBlockIndexTest, ClearingAReplicaLeavesTheOthers) {
  KvBlockIndex index(2, 1000);
  index.Stored(0, Keys{1, 2, 3});
  index.Stored(1, Keys{1, 2});
  index.ClearReplica(0);
  EXPECT_EQ(index.MatchPrefix(Keys{1, 2, 3}), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(index.replica_blocks(0), 0);
  EXPECT_EQ(index.num_blocks(), 2);
  // Removing what a replica never held, or out-of-range replicas: no effect.
  index.Removed(0, Keys{1});
  index.Stored(7, Keys{1});
  EXPECT_EQ(index.replica_blocks(1), 2);
}

TEST(KvBlockIndexTest, BoundDropsTheKeyStoredLongestAgo) {
  KvBlockIndex index(2, 3);
  index.Stored(0, Keys{1, 2, 3});
  index.Stored(1, Keys{1});  // stored again: now the newest
  index.Stored(0, Keys{4});  // over the bound: 2 goes
  EXPECT_EQ(index.num_blocks(), 3);
  EXPECT_EQ(index.evicted(), 1);
  EXPECT_EQ(index.MatchPrefix(Keys{1, 2}), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(index.MatchPrefix(Keys{4}), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(index.replica_blocks(0), 3);  // 1, 3, 4
}

// A random workload against a plain model of sets; the bound is large enough
// that nothing is evicted, and the order queue stays compact.
TEST(KvBlockIndexTest, AgreesWithSetsUnderRandomLoad) {
  constexpr int kReplicas = 5;
  KvBlockIndex index(kReplicas, 1 << 20);
  std::vector<std::vector<char>> held(kReplicas, std::vector<char>(200, 0));
  std::mt19937 rng(3);
  for (int step = 0; step < 20000; ++step) {
    const int r = static_cast<int>(rng() % kReplicas);
    const KvBlockKey k = rng() % 200;
    switch (rng() % 10) {
      case 0:
        if (step % 97 == 0) {
          index.ClearReplica(r);
          std::fill(held[r].begin(), held[r].end(), 0);
        }
        break;
      case 1:
      case 2:
      case 3:
        index.Removed(r, Keys{k});
        held[r][k] = 0;
        break;
      default: index.Stored(r, Keys{k}); held[r][k] = 1;
    }
  }
  for (int r = 0; r < kReplicas; ++r) {
    int64_t n = 0;
    for (char h : held[r]) n += h;
    EXPECT_EQ(index.replica_blocks(r), n);
  }
  for (KvBlockKey k = 0; k < 200; ++k) {
    const auto m = index.MatchPrefix(Keys{k});
    for (int r = 0; r < kReplicas; ++r) EXPECT_EQ(m[r], held[r][k]) << r << " " << k;
  }
  EXPECT_LT(index.bytes(), int64_t{1} << 20);
}

}  // namespace
}  // namespace brisk::gateway
