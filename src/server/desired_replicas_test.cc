#include "server/desired_replicas.h"

#include <gtest/gtest.h>

namespace brisk {
namespace {

TEST(DesiredReplicas, ArrivalsOverCapacity) {
  // 6 req/s arriving, one replica drains 4 req/s at most: 1.5 replicas.
  EXPECT_DOUBLE_EQ(DesiredReplicas(6, 0, 30, 4), 1.5);
  // A lightly loaded replica asks for a fraction, so a sum over the pool
  // can scale it down.
  EXPECT_DOUBLE_EQ(DesiredReplicas(1, 0, 30, 4), 0.25);
}

TEST(DesiredReplicas, BacklogAddsTheRateThatDrainsItInTime) {
  // 60 waiting, to be gone within 30 s: 2 req/s more on top of 2 arriving.
  EXPECT_DOUBLE_EQ(DesiredReplicas(2, 60, 30, 4), 1.0);
  EXPECT_DOUBLE_EQ(DesiredReplicas(0, 120, 30, 2), 2.0);
}

TEST(DesiredReplicas, EdgeCases) {
  EXPECT_EQ(DesiredReplicas(0, 0, 30, 4), 0);        // idle
  EXPECT_EQ(DesiredReplicas(3, 5, 30, 0), 1);        // capacity never measured
  EXPECT_EQ(DesiredReplicas(0, 0, 30, 0), 0);        // idle and unmeasured
  EXPECT_EQ(DesiredReplicas(-1, -3, 30, 4), 0);      // negative inputs are clamped
  EXPECT_DOUBLE_EQ(DesiredReplicas(0, 4, 0, 2), 2);  // target 0 s drains in 1 s
}

TEST(DrainCapacity, SaturatedRateIsTheCapacity) {
  DrainCapacity m(10, 60);
  m.Observe(0, 9, 4, 3);  // saturation starts
  m.Observe(5, 9, 4, 3);  // not yet 10 s
  EXPECT_EQ(m.capacity_per_s(), 0);
  m.Observe(11, 4, 4, 2);
  EXPECT_EQ(m.capacity_per_s(), 4);
  // Noise around 4/s averages out instead of ratcheting up to its peaks.
  for (int i = 0; i < 600; ++i) m.Observe(12 + i, i % 2 ? 5 : 3, 4, 2);
  EXPECT_NEAR(m.capacity_per_s(), 4, 0.1);
  // A slower workload (longer answers) moves it down, with time constant 60 s.
  for (int i = 0; i < 300; ++i) m.Observe(700 + i, 2, 4, 2);
  EXPECT_NEAR(m.capacity_per_s(), 2, 0.02);
  // A faster rate while merely busy does not count.
  m.Observe(1100, 30, 2, 0);
  m.Observe(1120, 30, 2, 0);
  EXPECT_NEAR(m.capacity_per_s(), 2, 0.02);
  // While saturated the replica asks for more than itself.
  EXPECT_GT(DesiredReplicas(2, 6, 10, m.capacity_per_s()), 1.2);
}

TEST(DrainCapacity, BusyRateStandsInUntilSaturationIsSeen) {
  DrainCapacity m(10);
  m.Observe(0, 50, 0, 0);  // idle: says nothing
  m.Observe(1, 2, 1, 0);   // busy from here
  m.Observe(8, 2, 1, 0);
  EXPECT_EQ(m.capacity_per_s(), 0);
  m.Observe(12, 2, 1, 0);
  EXPECT_EQ(m.capacity_per_s(), 2);
  // Load falls: this replica needs a fraction of itself.
  EXPECT_DOUBLE_EQ(DesiredReplicas(0.5, 0, 30, m.capacity_per_s()), 0.25);
}

}  // namespace
}  // namespace brisk
