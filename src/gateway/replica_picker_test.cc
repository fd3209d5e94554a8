// The replica picker: least outstanding work, ties, exclusion, ejection and
// re-admission, prefix affinity with bounded load, round-robin.
#include "gateway/replica_picker.h"

#include <gtest/gtest.h>

#include <map>

namespace brisk::gateway {
namespace {

using namespace std::chrono_literals;

const SteadyTime kT0 = SteadyTime{} + 1000h;

std::vector<std::string> Names(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("10.0.0." + std::to_string(i + 1) + ":8000");
  return names;
}

PickerOptions NoAffinity() {
  PickerOptions o;
  o.prefix_affinity = false;
  return o;
}

int MustPick(ReplicaPicker& p, uint64_t key = 0, const std::vector<int>& exclude = {},
             SteadyTime now = kT0) {
  auto r = p.Pick(key, exclude, now);
  EXPECT_TRUE(r.has_value());
  return r.value_or(-1);
}

TEST(ReplicaPicker, PicksTheLeastOutstandingWork) {
  ReplicaPicker p(Names(3), NoAffinity());
  p.Started(0);
  p.Started(0);
  p.Started(1);
  EXPECT_EQ(MustPick(p), 2);
  p.Started(2);
  p.Started(2);
  EXPECT_EQ(MustPick(p), 1);  // 2, 1, 2
  // The replica's reported queue counts as work too.
  p.ReportLoad(1, {.waiting = 5, .running = 4, .kv_fill = 0.1});
  EXPECT_NE(MustPick(p), 1);  // 2, 6, 2: a tie between 0 and 2 ...
  p.ReportLoad(0, {.waiting = 0, .running = 1, .kv_fill = 0.9});
  p.ReportLoad(2, {.waiting = 0, .running = 1, .kv_fill = 0.2});
  EXPECT_EQ(MustPick(p), 2);  // ... broken by the lower KV fill
  EXPECT_EQ(MustPick(p), 2);
  EXPECT_EQ(p.work(1), 6);
}

TEST(ReplicaPicker, FinishedReleasesWork) {
  ReplicaPicker p(Names(2), NoAffinity());
  p.Started(0);
  EXPECT_EQ(MustPick(p), 1);
  p.Started(1);
  p.Started(1);
  p.Finished(0, RequestOutcome::kOk, kT0);
  EXPECT_EQ(p.replicas()[0].outstanding, 0);
  EXPECT_EQ(MustPick(p), 0);
  p.Finished(0, RequestOutcome::kOk, kT0);  // unmatched: never below zero
  EXPECT_EQ(p.replicas()[0].outstanding, 0);
}

TEST(ReplicaPicker, TiesGoRoundRobin) {
  ReplicaPicker p(Names(3), NoAffinity());
  std::vector<int> got;
  for (int i = 0; i < 6; ++i) got.push_back(MustPick(p));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 0, 1, 2}));
  // Only the tied ones take turns.
  p.Started(1);
  got.clear();
  for (int i = 0; i < 4; ++i) got.push_back(MustPick(p));
  EXPECT_EQ(got, (std::vector<int>{0, 2, 0, 2}));
}

TEST(ReplicaPicker, ExcludeListGoesElsewhere) {
  ReplicaPicker p(Names(3), NoAffinity());
  p.Started(1);
  p.Started(2);
  EXPECT_EQ(MustPick(p, 0, {0}), 1);
  EXPECT_EQ(MustPick(p, 0, {0, 1}), 2);
  EXPECT_FALSE(p.Pick(0, {0, 1, 2}, kT0).has_value());
  // Affinity obeys it too.
  ReplicaPicker a(Names(3), PickerOptions{});
  const int home = MustPick(a, 42);
  const int second = MustPick(a, 42, {home});
  EXPECT_NE(second, home);
  EXPECT_EQ(MustPick(a, 42, {home}), second);
}

TEST(ReplicaPicker, EjectsAfterConsecutiveFailuresAndReadmitsAfterTimeAndHealthyReport) {
  PickerOptions o = NoAffinity();
  o.eject_after_failures = 3;
  o.eject_for = 5000ms;
  ReplicaPicker p(Names(2), o);
  // Two failures, a success, two failures: not consecutive, still in.
  for (auto outcome : {RequestOutcome::kFailure, RequestOutcome::kFailure, RequestOutcome::kOk,
                       RequestOutcome::kFailure, RequestOutcome::kFailure}) {
    p.Started(0);
    p.Finished(0, outcome, kT0);
  }
  EXPECT_FALSE(p.replicas()[0].ejected);
  EXPECT_EQ(p.healthy_count(kT0), 2);
  p.Started(0);
  p.Finished(0, RequestOutcome::kFailure, kT0);
  ASSERT_TRUE(p.replicas()[0].ejected);
  EXPECT_EQ(p.healthy_count(kT0), 1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(MustPick(p), 1);

  // During the ejection neither a healthy report nor a success re-admits.
  p.ReportHealth(0, true, kT0 + 1s);
  p.Finished(0, RequestOutcome::kOk, kT0 + 2s);
  EXPECT_TRUE(p.replicas()[0].ejected);
  EXPECT_EQ(MustPick(p, 0, {}, kT0 + 4s), 1);
  // Time up: still out of the normal rotation until it proves healthy ...
  EXPECT_EQ(MustPick(p, 0, {}, kT0 + 6s), 1);
  EXPECT_EQ(MustPick(p, 0, {}, kT0 + 6s), 1);
  // ... which a passing health check does.
  p.ReportHealth(0, true, kT0 + 6s);
  EXPECT_FALSE(p.replicas()[0].ejected);
  EXPECT_EQ(p.healthy_count(kT0 + 6s), 2);
  EXPECT_EQ(p.replicas()[0].consecutive_failures, 0);
  std::vector<int> got;
  for (int i = 0; i < 4; ++i) got.push_back(MustPick(p, 0, {}, kT0 + 6s));
  EXPECT_EQ(std::count(got.begin(), got.end(), 0), 2);
}

TEST(ReplicaPicker, RepeatedEjectionDoublesUpToEightTimes) {
  PickerOptions o = NoAffinity();
  o.eject_after_failures = 1;
  o.eject_for = 1000ms;
  ReplicaPicker p(Names(2), o);
  SteadyTime now = kT0;
  std::vector<std::chrono::milliseconds> durations;
  for (int i = 0; i < 5; ++i) {
    p.ReportHealth(0, false, now);  // ejects (or, once the time is up, ejects again)
    ASSERT_TRUE(p.replicas()[0].ejected);
    durations.push_back(
        std::chrono::duration_cast<std::chrono::milliseconds>(p.replicas()[0].ejected_until - now));
    now = p.replicas()[0].ejected_until;
  }
  EXPECT_EQ(durations,
            (std::vector<std::chrono::milliseconds>{1000ms, 2000ms, 4000ms, 8000ms, 8000ms}));
  // Re-admitted and healthy for long enough: the next ejection is short again.
  p.ReportHealth(0, true, now);
  ASSERT_FALSE(p.replicas()[0].ejected);
  now += 9s;
  p.ReportHealth(0, false, now);
  EXPECT_EQ(p.replicas()[0].ejected_until - now, std::chrono::steady_clock::duration(1000ms));
}

TEST(ReplicaPicker, ExpiredEjectedReplicaIsProbedOnlyAsLastResort) {
  PickerOptions o = NoAffinity();
  o.eject_after_failures = 1;
  o.eject_for = 1000ms;
  ReplicaPicker p(Names(1), o);
  p.Started(0);
  p.Finished(0, RequestOutcome::kFailure, kT0);
  EXPECT_FALSE(p.Pick(0, {}, kT0 + 500ms).has_value());  // every replica ejected
  EXPECT_EQ(MustPick(p, 0, {}, kT0 + 1500ms), 0);        // time up: a probe
  p.Started(0);
  p.Finished(0, RequestOutcome::kOk, kT0 + 1600ms);  // the probe succeeded
  EXPECT_FALSE(p.replicas()[0].ejected);
}

TEST(ReplicaPicker, TooManyRequestsIsNotAFailure) {
  PickerOptions o = NoAffinity();
  o.eject_after_failures = 2;
  ReplicaPicker p(Names(2), o);
  p.Started(0);
  p.Finished(0, RequestOutcome::kFailure, kT0);
  for (int i = 0; i < 10; ++i) {
    p.Started(0);
    p.Finished(0, RequestOutcome::kBusy, kT0);
  }
  EXPECT_FALSE(p.replicas()[0].ejected);
  // Nor a success: the earlier failure still counts.
  EXPECT_EQ(p.replicas()[0].consecutive_failures, 1);
  EXPECT_EQ(p.replicas()[0].outstanding, 0);
  p.Started(0);
  p.Finished(0, /*failure=*/true, kT0);
  EXPECT_TRUE(p.replicas()[0].ejected);
}

TEST(ReplicaPicker, AffinitySendsTheSameKeyToTheSameReplica) {
  ReplicaPicker p(Names(3), PickerOptions{});
  for (uint64_t key = 1; key <= 50; ++key) {
    const int first = MustPick(p, key);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(MustPick(p, key), first) << key;
  }
  // A second picker with the same names agrees (other gateways route alike).
  ReplicaPicker q(Names(3), PickerOptions{});
  for (uint64_t key = 1; key <= 50; ++key) EXPECT_EQ(MustPick(q, key), MustPick(p, key));
}

TEST(ReplicaPicker, AffinitySpreadsKeysRoughlyEvenly) {
  ReplicaPicker p(Names(3), PickerOptions{});
  std::map<int, int> count;
  for (uint64_t key = 1; key <= 1000; ++key) ++count[MustPick(p, key)];
  ASSERT_EQ(count.size(), 3u);
  for (const auto& [replica, n] : count) {
    EXPECT_GE(n, 200) << replica;
    EXPECT_LE(n, 470) << replica;
  }
}

TEST(ReplicaPicker, BoundedLoadMovesAHotKeyOffAnOverloadedReplica) {
  ReplicaPicker p(Names(3), PickerOptions{});  // load_factor 1.25
  const uint64_t hot = 7;
  const int home = MustPick(p, hot);
  // Work W = 0, then 1: the cap ceil(1.25 x W / 3) is 0, then 1; home holds it.
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(MustPick(p, hot), home);
    p.Started(home);
  }
  // W = 2: the cap is ceil(0.83) = 1 and home has 2: the key goes on.
  const int next = MustPick(p, hot);
  EXPECT_NE(next, home);
  // The overflow always goes to the same next replica on the ring.
  EXPECT_EQ(MustPick(p, hot), next);
  // Once the home replica drains, the key returns.
  p.Finished(home, RequestOutcome::kOk, kT0);
  p.Finished(home, RequestOutcome::kOk, kT0);
  EXPECT_EQ(MustPick(p, hot), home);
  // A reported queue counts as work too: 10 waiting against a cap of 5.
  ReplicaLoad busy;
  busy.waiting = 10;
  p.ReportLoad(home, busy);
  EXPECT_EQ(MustPick(p, hot), next);
  // Many keys under a hot spot: none goes to the overloaded replica.
  for (uint64_t key = 100; key < 200; ++key) EXPECT_NE(MustPick(p, key), home) << key;
}

TEST(ReplicaPicker, AddingAReplicaMovesOnlyItsShareOfKeys) {
  ReplicaPicker three(Names(3), PickerOptions{});
  ReplicaPicker four(Names(4), PickerOptions{});
  int moved = 0;
  for (uint64_t key = 1; key <= 1000; ++key) {
    const int before = MustPick(three, key);
    const int after = MustPick(four, key);
    if (after != before) {
      ++moved;
      EXPECT_EQ(after, 3) << "key " << key << " moved between old replicas";
    }
  }
  // About 1/4 of the keys move (all to the new replica).
  EXPECT_GE(moved, 120);
  EXPECT_LE(moved, 400);
}

TEST(ReplicaPicker, AffinityKeyZeroOrDisabledMeansLeastLoaded) {
  ReplicaPicker p(Names(3), PickerOptions{});
  p.Started(0);
  p.Started(1);
  EXPECT_EQ(MustPick(p, 0), 2);
  ReplicaPicker q(Names(3), NoAffinity());
  q.Started(0);
  q.Started(2);
  for (uint64_t key = 1; key <= 20; ++key) EXPECT_EQ(MustPick(q, key), 1);
}

TEST(ReplicaPicker, RoundRobinIgnoresLoadAndAffinity) {
  PickerOptions o;
  o.policy = PickPolicy::kRoundRobin;
  ReplicaPicker p(Names(3), o);
  p.Started(0);
  p.Started(0);
  p.ReportLoad(1, {.waiting = 100, .running = 10, .kv_fill = 1.0});
  std::vector<int> got;
  for (int i = 0; i < 7; ++i) got.push_back(MustPick(p, /*key=*/99));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
  // Skips what is excluded or ejected.
  EXPECT_EQ(MustPick(p, 0, {1}), 2);
  PickerOptions e = o;
  e.eject_after_failures = 1;
  ReplicaPicker q(Names(3), e);
  q.ReportHealth(1, false, kT0);
  got.clear();
  for (int i = 0; i < 4; ++i) got.push_back(MustPick(q));
  EXPECT_EQ(got, (std::vector<int>{0, 2, 0, 2}));
}

TEST(ReplicaPicker, NoReplicas) {
  ReplicaPicker p({}, PickerOptions{});
  EXPECT_FALSE(p.Pick(5, {}, kT0).has_value());
  EXPECT_EQ(p.healthy_count(kT0), 0);
}

PrefixMatch Cached(std::vector<int32_t> cached, int32_t prompt_blocks = 100) {
  PrefixMatch m;
  m.prompt_blocks = prompt_blocks;
  m.block_size = 16;
  m.cached_blocks = std::move(cached);
  m.known.assign(m.cached_blocks.size(), 1);
  return m;
}

TEST(ReplicaPicker, CachedPrefixWinsUntilItsLoadOutweighsIt) {
  PickerOptions o;
  o.queued_request_tokens = 1024;
  ReplicaPicker p(Names(3), o);
  const PrefixMatch m = Cached({0, 90, 10});
  EXPECT_EQ(p.Pick(7, {}, kT0, &m), 1);
  // Replica 1 saves 80 blocks (1,280 tokens) over replica 2: one request in
  // flight there still leaves it cheaper, two do not.
  p.Started(1);
  EXPECT_EQ(p.Pick(7, {}, kT0, &m), 1);
  p.Started(1);
  EXPECT_NE(p.Pick(7, {}, kT0, &m), 1);
  // Excluded (a retry) or ejected: the next cheapest.
  EXPECT_EQ(p.Pick(7, {1}, kT0, &m), 2);
}

TEST(ReplicaPicker, NothingCachedOrNothingKnownFallsBackToAffinity) {
  ReplicaPicker p(Names(3), PickerOptions{});
  const int home = *p.Pick(12345, {}, kT0);
  const PrefixMatch none = Cached({0, 0, 0});
  EXPECT_EQ(p.Pick(12345, {}, kT0, &none), home);
  PrefixMatch unknown = Cached({50, 50, 50});
  unknown.known = {0, 0, 0};  // no live KV events: their counts mean nothing
  EXPECT_EQ(p.Pick(12345, {}, kT0, &unknown), home);
  PrefixMatch one = Cached({50, 50, 50});
  one.known = {0, 0, 0};
  one.known[(home + 1) % 3] = 1;
  EXPECT_EQ(p.Pick(12345, {}, kT0, &one), (home + 1) % 3);
}

TEST(ReplicaPicker, NothingCachedGoesByLoadWhereAffinityWouldStayHome) {
  ReplicaPicker p(Names(3), PickerOptions{});
  const int home = *p.Pick(99, {}, kT0);
  p.Started(home);  // within affinity's bounded load (ceil(1.25 x 1/3) = 1)
  EXPECT_EQ(*p.Pick(99, {}, kT0), home);
  const PrefixMatch none = Cached({0, 0, 0});
  EXPECT_NE(*p.Pick(99, {}, kT0, &none), home);
}

}  // namespace
}  // namespace brisk::gateway
