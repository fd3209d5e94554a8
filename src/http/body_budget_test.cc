// The body budget alone: limits, the small-body reserve, release.
#include "http/body_budget.h"

#include <gtest/gtest.h>

namespace brisk::http::internal {
namespace {

constexpr size_t MiB = 1 << 20;

TEST(BodyBudget, StalledLargeUploadsLeaveRoomForSmallBodies) {
  auto budget = std::make_shared<BodyBudget>(64 * MiB);  // reserve: 8 MiB
  std::vector<std::unique_ptr<BodyLease>> uploads;
  for (;;) {
    auto l = std::make_unique<BodyLease>(budget);
    if (!l->GrowTo(4 * MiB)) break;
    uploads.push_back(std::move(l));
  }
  EXPECT_EQ(uploads.size(), 14u);  // 56 MiB of large bodies, not 64
  std::vector<std::unique_ptr<BodyLease>> chats;
  for (int i = 0; i < 100; ++i) {
    auto l = std::make_unique<BodyLease>(budget);
    ASSERT_TRUE(l->GrowTo(2000)) << i;  // ordinary requests still get in
    chats.push_back(std::move(l));
  }
  // A small lease that grows large is held to the large share.
  BodyLease grow(budget);
  EXPECT_TRUE(grow.GrowTo(kSmallBodyBytes));
  EXPECT_FALSE(grow.GrowTo(kSmallBodyBytes + 1));
  uploads.clear();
  chats.clear();
  grow.Release();
  EXPECT_EQ(budget->used(), 0u);
}

TEST(BodyBudget, OneLargestBodyFitsAnIdleBudget) {
  auto budget = std::make_shared<BodyBudget>(4 * MiB);
  BodyLease a(budget);
  EXPECT_TRUE(a.GrowTo(4 * MiB));  // the whole budget, past the reserve: alone
  BodyLease b(budget);
  EXPECT_FALSE(b.GrowTo(1));
  a.Release();
  EXPECT_TRUE(b.GrowTo(1000));
}

}  // namespace
}  // namespace brisk::http::internal
