#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <vector>

namespace brisk {
namespace {

TEST(ThreadPoolTest, EveryThreadRunsOncePerRegion) {
  for (int n : {1, 2, 4}) {
    ThreadPool pool(n);
    std::vector<std::atomic<int>> hits(n);
    for (int round = 0; round < 200; ++round) {
      auto fn = [&](int t, int nt) {
        EXPECT_EQ(nt, n);
        hits[t].fetch_add(1);
      };
      pool.Run(fn);
    }
    for (auto& h : hits) EXPECT_EQ(h.load(), 200);
  }
}

TEST(ThreadPoolTest, ParallelForCoversRangeOnce) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 7, 64, 1000, 1001}) {
    std::vector<int> seen(n, 0);
    pool.ParallelFor(n, 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) seen[i]++;
    });
    for (int v : seen) EXPECT_EQ(v, 1);
  }
}

}  // namespace
}  // namespace brisk
