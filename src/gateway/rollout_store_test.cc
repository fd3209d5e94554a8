// The rollouts' shared record on SQLite and on a real PostgreSQL: two
// gateways racing on one decision take it once, one rollout per tier
// whoever starts it, every gateway's samples counted together.
#include "gateway/rollout_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "gateway/pg_test_util.h"

namespace brisk::gateway {
namespace {

using Json = nlohmann::json;
constexpr int64_t kT0 = 1'796'083'200'000;  // 2026-12-01T00:00:00Z

StoredRollout Record(const std::string& id, const std::string& tier) {
  RolloutSpec spec;
  spec.tier = tier;
  spec.upstreams = {UpstreamConfig{}};
  spec.upstreams[0].url = "http://127.0.0.1:9001";
  spec.upstreams[0].api_key = "sk-candidate";
  spec.gate_report = {{"gate_passed", true}};
  StoredRollout r;
  r.id = id;
  r.tier = tier;
  r.started_by = "admin";
  r.spec = RolloutSpecRecord(spec);
  r.started_ms = kT0;
  r.stage = RolloutStage::kCanary;
  r.step = 0;
  r.stage_since_ms = kT0;
  r.version = 1;
  return r;
}

void CheckRecordRoundTrips(RolloutStore& s) {
  ASSERT_TRUE(s.Insert(Record("ro-1", "small"), {{"action", "start"}}).ok());
  auto active = s.Active();
  ASSERT_TRUE(active.ok()) << active.status().ToString();
  ASSERT_EQ(active->size(), 1u);
  const StoredRollout& r = (*active)[0];
  EXPECT_EQ(r.id, "ro-1");
  EXPECT_EQ(r.stage, RolloutStage::kCanary);
  EXPECT_EQ(r.version, 1);
  // The spec reads back whole: the candidate's key and the gate report too.
  auto spec = ParseRolloutSpec(r.spec);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->upstreams[0].api_key, "sk-candidate");
  EXPECT_EQ(spec->gate_report["gate_passed"], true);
  // A second rollout on the tier is refused; another tier is fine.
  Status twin = s.Insert(Record("ro-2", "small"), {{"action", "start"}});
  EXPECT_EQ(twin.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twin.message().find("ro-1"), std::string::npos) << twin.message();
  EXPECT_TRUE(s.Insert(Record("ro-3", "large"), {{"action", "start"}}).ok());
  // Finishing one frees its tier.
  StoredRollout done = r;
  done.stage = RolloutStage::kRolledBack;
  done.finished = true;
  done.version = 2;
  ASSERT_TRUE(*s.Decide(done, {{"action", "rollback"}}));
  EXPECT_TRUE(s.Insert(Record("ro-4", "small"), {{"action", "start"}}).ok());
  auto finished = s.Finished(10);
  ASSERT_EQ(finished->size(), 1u);
  EXPECT_EQ((*finished)[0].id, "ro-1");
  auto audit = s.Audit(10);
  ASSERT_EQ(audit->size(), 4u);
}

// Two gateways see the same breach and both try to roll back from version 1:
// one decision, one audit entry.
void RaceOnOneDecision(RolloutStore& a, RolloutStore& b) {
  ASSERT_TRUE(a.Insert(Record("ro-race", "small"), {{"action", "start"}}).ok());
  for (int round = 0; round < 20; ++round) {
    StoredRollout cur = (*a.Active())[0];
    StoredRollout next = cur;
    next.version = cur.version + 1;
    next.stage_since_ms = kT0 + round;
    std::atomic<int> won{0};
    std::thread ta([&] { won += *a.Decide(next, {{"action", "advance"}, {"by", "a"}}); });
    std::thread tb([&] { won += *b.Decide(next, {{"action", "advance"}, {"by", "b"}}); });
    ta.join();
    tb.join();
    EXPECT_EQ(won.load(), 1) << "round " << round;
  }
  auto audit = a.Audit(100);
  ASSERT_TRUE(audit.ok());
  EXPECT_EQ(audit->size(), 21u);  // the start and one entry per round
  EXPECT_EQ((*a.Active())[0].version, 21);
}

void CheckSamplesOfEveryGateway(RolloutStore& a, RolloutStore& b) {
  std::vector<StoredSample> sa(3), sb(2);
  for (size_t i = 0; i < sa.size(); ++i) sa[i].time_ms = kT0 + static_cast<int64_t>(i);
  for (auto& s : sb) {
    s.candidate = true;
    s.time_ms = kT0 + 10;
    s.status = 502;
  }
  StoredSample judge;
  judge.judge = true;
  judge.time_ms = kT0 + 20;
  judge.score = 0.5;
  judge.inconsistent = true;
  ASSERT_TRUE(a.AddSamples("ro-x", sa).ok());
  ASSERT_TRUE(b.AddSamples("ro-x", sb).ok());
  ASSERT_TRUE(b.AddSamples("ro-x", std::vector<StoredSample>{judge}).ok());
  auto all = a.Samples("ro-x", kT0);
  ASSERT_EQ(all->size(), 5u);  // requests only, oldest first
  EXPECT_FALSE((*all)[0].candidate);
  EXPECT_EQ((*all)[4].status, 502);
  EXPECT_EQ(a.Samples("ro-x", kT0 + 5)->size(), 2u);
  auto j = a.Judged("ro-x", kT0 + 15);
  EXPECT_EQ(j->judged, 1);
  EXPECT_EQ(j->score_sum, 0.5);
  EXPECT_EQ(j->inconsistent, 1);
  EXPECT_EQ(j->stage_pairs, 1);
  EXPECT_EQ(a.Judged("ro-x", kT0 + 25)->stage_pairs, 0);
  ASSERT_TRUE(a.Trim(kT0 + 5).ok());
  EXPECT_EQ(b.Samples("ro-x", 0)->size(), 2u);
}

std::unique_ptr<RolloutStore> OpenStore(const std::string& url) {
  auto db = OpenSqlDb(url);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  if (!db.ok()) return nullptr;
  auto s = RolloutStore::Open(std::move(db).value());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

class SqliteRolloutStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             fmt::format("brisk-rollouts-{}-{}.db", getpid(),
                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    std::filesystem::remove(path_);
  }
  void TearDown() override {
    for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + ext);
  }
  std::string path_;
};

TEST_F(SqliteRolloutStoreTest, RecordRoundTrips) { CheckRecordRoundTrips(*OpenStore(path_)); }

TEST_F(SqliteRolloutStoreTest, TwoGatewaysTakeOneDecisionOnce) {
  auto a = OpenStore(path_), b = OpenStore(path_);
  RaceOnOneDecision(*a, *b);
}

TEST_F(SqliteRolloutStoreTest, SamplesOfEveryGatewayCount) {
  auto a = OpenStore(path_), b = OpenStore(path_);
  CheckSamplesOfEveryGateway(*a, *b);
}

class PostgresRolloutStoreTest : public test::PostgresTest {};

TEST_F(PostgresRolloutStoreTest, RecordRoundTrips) { CheckRecordRoundTrips(*OpenStore(url_)); }

TEST_F(PostgresRolloutStoreTest, TwoGatewaysTakeOneDecisionOnce) {
  std::unique_ptr<RolloutStore> a, b;
  std::thread ta([&] { a = OpenStore(url_); });  // both create the tables at once
  std::thread tb([&] { b = OpenStore(url_); });
  ta.join();
  tb.join();
  ASSERT_TRUE(a && b);
  RaceOnOneDecision(*a, *b);
}

TEST_F(PostgresRolloutStoreTest, TwoGatewaysStartingOneTierAtOnceGetOneRollout) {
  auto a = OpenStore(url_), b = OpenStore(url_);
  for (int round = 0; round < 10; ++round) {
    std::atomic<int> started{0};
    std::thread ta([&] { started += a->Insert(Record(fmt::format("a{}", round), "t"), {}).ok(); });
    std::thread tb([&] { started += b->Insert(Record(fmt::format("b{}", round), "t"), {}).ok(); });
    ta.join();
    tb.join();
    ASSERT_EQ(started.load(), 1) << "round " << round;
    StoredRollout r = (*a->Active())[0];
    r.finished = true;
    r.stage = RolloutStage::kAborted;
    r.version += 1;
    ASSERT_TRUE(*a->Decide(r, {}));
  }
}

TEST_F(PostgresRolloutStoreTest, SamplesOfEveryGatewayCount) {
  auto a = OpenStore(url_), b = OpenStore(url_);
  CheckSamplesOfEveryGateway(*a, *b);
}

}  // namespace
}  // namespace brisk::gateway
