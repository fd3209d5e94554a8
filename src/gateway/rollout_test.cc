#include "gateway/rollout.h"

#include <gtest/gtest.h>

namespace brisk::gateway {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

Json MinimalSpec() {
  return {{"tier", "small"},
          {"upstreams", {"http://127.0.0.1:9001"}},
          {"gate_report", {{"gate_passed", true}}}};
}

RolloutSpec Spec(double shadow_share, std::vector<CanaryStep> steps) {
  Json j = MinimalSpec();
  j["shadow"] = {{"share", shadow_share}, {"duration_s", 10}, {"min_pairs", 2}};
  Json c = Json::array();
  for (const CanaryStep& s : steps) c.push_back({{"share", s.share}, {"duration_s", s.duration_s}});
  j["canary"] = c;
  j["thresholds"] = {{"min_samples", 5}, {"window_s", 30}, {"min_judged", 4}};
  auto spec = ParseRolloutSpec(j);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return *spec;
}

ArmSample Ok(RolloutClock::time_point t, double ttft_ms) {
  ArmSample s;
  s.time = t;
  s.ttft_ms = ttft_ms;
  return s;
}

TEST(RolloutSpecTest, DefaultsAndStrictness) {
  auto spec = ParseRolloutSpec(MinimalSpec());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->upstreams[0].type, "brisk");
  EXPECT_EQ(spec->canary.size(), 3u);

  Json unknown = MinimalSpec();
  unknown["thresholds"] = {{"ttft_p59_ratio", 2}};
  EXPECT_NE(ParseRolloutSpec(unknown).status().message().find("ttft_p59_ratio"), std::string::npos);
  Json no_gate = MinimalSpec();
  no_gate.erase("gate_report");
  EXPECT_NE(ParseRolloutSpec(no_gate).status().message().find("gate_report"), std::string::npos);
  Json down = MinimalSpec();
  down["canary"] = {{{"share", 0.5}, {"duration_s", 1}}, {{"share", 0.25}, {"duration_s", 1}}};
  EXPECT_FALSE(ParseRolloutSpec(down).ok());
  Json bad_url = MinimalSpec();
  bad_url["upstreams"] = {"https://x"};
  EXPECT_FALSE(ParseRolloutSpec(bad_url).ok());
  Json wrong_type = MinimalSpec();
  wrong_type["shadow"] = {{"share", "half"}};
  EXPECT_FALSE(ParseRolloutSpec(wrong_type).ok());
}

TEST(RolloutTest, WalksShadowCanaryPromoteOnTimers) {
  const auto t0 = RolloutClock::now();
  Rollout r("ro-1", Spec(0.5, {{0.05, 5}, {0.5, 5}}), "admin", t0);
  EXPECT_EQ(r.stage(), RolloutStage::kShadow);
  EXPECT_EQ(r.CandidateShare(), 0);
  EXPECT_EQ(r.ShadowShare(), 0.5);
  // Shadow needs both its time and its judged pairs.
  EXPECT_FALSE(r.Tick(t0 + seconds(11)));
  r.RecordJudge(0.5, false);
  r.RecordJudge(1, false);
  auto d = r.Tick(t0 + seconds(11));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->action, "advance");
  EXPECT_EQ(r.stage(), RolloutStage::kCanary);
  EXPECT_DOUBLE_EQ(r.CandidateShare(), 0.05);
  EXPECT_FALSE(r.Tick(t0 + seconds(12)));
  ASSERT_TRUE(r.Tick(t0 + seconds(17)));
  EXPECT_DOUBLE_EQ(r.CandidateShare(), 0.5);
  d = r.Tick(t0 + seconds(23));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->action, "promote");
  EXPECT_EQ(r.stage(), RolloutStage::kPromoted);
  EXPECT_EQ(r.CandidateShare(), 1);
  EXPECT_EQ(r.ShadowShare(), 0);
  EXPECT_FALSE(r.Promote("admin", t0 + seconds(24)).ok());
}

TEST(RolloutTest, NoShadowStartsAtTheFirstCanaryStep) {
  Rollout r("ro-2", Spec(0, {{0.1, 5}}), "admin", RolloutClock::now());
  EXPECT_EQ(r.stage(), RolloutStage::kCanary);
  EXPECT_DOUBLE_EQ(r.CandidateShare(), 0.1);
}

TEST(RolloutTest, SlowCandidateRollsBackOnTtftP95) {
  const auto t0 = RolloutClock::now();
  Rollout r("ro-3", Spec(0, {{0.5, 60}}), "admin", t0);
  for (int i = 0; i < 5; ++i) r.Record(false, Ok(t0 + milliseconds(i), 100));
  for (int i = 0; i < 4; ++i) r.Record(true, Ok(t0 + milliseconds(i), 400));
  EXPECT_FALSE(r.Tick(t0 + seconds(1)));  // 4 candidate samples: below min_samples
  r.Record(true, Ok(t0 + milliseconds(5), 400));
  auto d = r.Tick(t0 + seconds(1));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->action, "rollback");
  EXPECT_EQ(d->who, "auto");
  EXPECT_EQ(d->metric, "ttft_p95_ms");
  EXPECT_DOUBLE_EQ(d->value, 400);
  EXPECT_DOUBLE_EQ(d->limit, 100 * 1.5 + 50);
  EXPECT_EQ(r.stage(), RolloutStage::kRolledBack);
  EXPECT_EQ(r.CandidateShare(), 0);
  EXPECT_EQ(r.ShadowShare(), 0);
  EXPECT_FALSE(r.Tick(t0 + seconds(2)));
}

TEST(RolloutTest, OldSamplesLeaveTheWindow) {
  const auto t0 = RolloutClock::now();
  Rollout r("ro-4", Spec(0, {{0.5, 600}}), "admin", t0);
  for (int i = 0; i < 5; ++i) r.Record(false, Ok(t0, 100));
  for (int i = 0; i < 5; ++i) r.Record(true, Ok(t0, 400));
  for (int i = 0; i < 5; ++i) r.Record(false, Ok(t0 + seconds(40), 100));
  for (int i = 0; i < 5; ++i) r.Record(true, Ok(t0 + seconds(40), 120));
  // At 45 s the slow samples (t0) are out of the 30 s window.
  EXPECT_FALSE(r.Tick(t0 + seconds(45)));
}

TEST(RolloutTest, ErrorsAndStructuredFailuresRollBack) {
  const auto t0 = RolloutClock::now();
  Rollout errors("ro-5", Spec(0, {{0.5, 60}}), "admin", t0);
  for (int i = 0; i < 10; ++i) errors.Record(false, Ok(t0, 100));
  for (int i = 0; i < 10; ++i) {
    ArmSample s = Ok(t0, 100);
    if (i < 2) s.status = 502;
    errors.Record(true, s);
  }
  auto d = errors.Tick(t0 + seconds(1));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->metric, "error_rate");
  EXPECT_DOUBLE_EQ(d->value, 0.2);

  Rollout so("ro-6", Spec(0, {{0.5, 60}}), "admin", t0);
  for (int i = 0; i < 5; ++i) {
    ArmSample s = Ok(t0, 100);
    s.so_valid = 1;
    so.Record(false, s);
  }
  for (int i = 0; i < 4; ++i) {
    ArmSample s = Ok(t0, 100);
    s.so_valid = 0;
    so.Record(true, s);
  }
  EXPECT_FALSE(so.Tick(t0 + seconds(1)));  // 4 structured candidate samples: too few
  for (int i = 0; i < 1; ++i) {
    ArmSample s = Ok(t0, 100);
    s.so_valid = i == 0 ? 0 : 1;
    so.Record(true, s);
  }
  d = so.Tick(t0 + seconds(1));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->metric, "structured_failure_rate");
}

TEST(RolloutTest, JudgeRollsBackOnlyWhenConfidentlyWorse) {
  const auto t0 = RolloutClock::now();
  Rollout r("ro-7", Spec(0.5, {{0.5, 60}}), "admin", t0);
  // Ties keep the interval around 0.5: no breach however many.
  for (int i = 0; i < 20; ++i) r.RecordJudge(0.5, false);
  EXPECT_FALSE(r.Tick(t0 + seconds(1)));
  Rollout worse("ro-8", Spec(0.5, {{0.5, 60}}), "admin", t0);
  for (int i = 0; i < 3; ++i) worse.RecordJudge(0, false);
  EXPECT_FALSE(worse.Tick(t0 + seconds(1)));  // 3 < min_judged
  for (int i = 0; i < 9; ++i) worse.RecordJudge(0, false);
  auto d = worse.Tick(t0 + seconds(1));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->metric, "judge_score_upper95");
  EXPECT_LT(d->value, 0.35);
}

TEST(RolloutTest, OperatorPromoteAndAbort) {
  const auto t0 = RolloutClock::now();
  Rollout r("ro-9", Spec(0.2, {{0.05, 60}, {0.5, 60}}), "admin", t0);
  auto d = r.Promote("admin:ana", t0);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->who, "admin:ana");
  EXPECT_EQ(d->from, RolloutStage::kShadow);
  EXPECT_EQ(r.step(), 0);
  ASSERT_TRUE(r.Promote("admin:ana", t0).ok());
  EXPECT_EQ(r.step(), 1);
  auto a = r.Abort("admin:bo", t0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(r.stage(), RolloutStage::kAborted);
  EXPECT_EQ(r.CandidateShare(), 0);
  EXPECT_FALSE(r.Abort("admin:bo", t0).ok());
  EXPECT_FALSE(r.Promote("admin:bo", t0).ok());
}

TEST(RolloutTest, WithoutAutoPromoteTheLastStepWaits) {
  Json j = MinimalSpec();
  j["shadow"] = {{"share", 0}};
  j["canary"] = {{{"share", 0.5}, {"duration_s", 1}}};
  j["auto_promote"] = false;
  auto spec = ParseRolloutSpec(j);
  ASSERT_TRUE(spec.ok());
  const auto t0 = RolloutClock::now();
  Rollout r("ro-10", *spec, "admin", t0);
  EXPECT_FALSE(r.Tick(t0 + seconds(100)));
  EXPECT_EQ(r.stage(), RolloutStage::kCanary);
  ASSERT_TRUE(r.Promote("admin", t0 + seconds(100)).ok());
  EXPECT_EQ(r.stage(), RolloutStage::kPromoted);
}

TEST(ArmWindowTest, P95IsNearestRank) {
  ArmWindow w;
  const auto t0 = RolloutClock::now();
  for (int i = 1; i <= 20; ++i) w.Add(Ok(t0, i));
  ArmStats s = w.Stats();
  EXPECT_EQ(s.n, 20);
  EXPECT_DOUBLE_EQ(s.ttft_p95_ms, 19);
  EXPECT_DOUBLE_EQ(s.tpot_p95_ms, -1);
}

}  // namespace
}  // namespace brisk::gateway
