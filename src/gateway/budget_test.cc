// Budgets over the ledger's database: SQLite here (a file per test), and
// two gateways' Budgets racing on one real PostgreSQL.
#include "gateway/budget.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "gateway/ledger_test_util.h"
#include "gateway/pg_test_util.h"
#include "gateway/utc_time.h"

namespace brisk::gateway {
namespace {

using test::kDec1Ms;

Budgets::Time At(int64_t unix_ms) { return Budgets::Time(std::chrono::milliseconds(unix_ms)); }

constexpr int64_t kHour = 3'600'000;

BudgetConfig KeyBudget(std::string key, double daily, double monthly) {
  BudgetConfig b;
  b.key = std::move(key);
  b.daily_usd = daily;
  b.monthly_usd = monthly;
  return b;
}

BudgetConfig FeatureBudget(std::string feature, double daily, double monthly) {
  BudgetConfig b;
  b.feature = std::move(feature);
  b.daily_usd = daily;
  b.monthly_usd = monthly;
  return b;
}

// A fresh ledger database (the ledger creates brisk_ledger, which seeds the
// windows) and Budgets over it.
class BudgetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "brisk-budget-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    url_ = dir_ + "/ledger.db";
    auto ledger = OpenLedger(url_);
    ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
    ledger_ = std::move(ledger).value();
  }
  void TearDown() override {
    ledger_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<Budgets> Open(const std::vector<BudgetConfig>& configs,
                                Budgets::Options options = {}) {
    auto db = OpenSqlDb(url_);
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    auto b = Budgets::Open(configs, std::move(db).value(), options);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(b).value() : nullptr;
  }

  std::string dir_, url_;
  std::unique_ptr<Ledger> ledger_;
};

// Reserve then settle at once: a request of `cost` whose estimate was `estimate`.
Status Spend(Budgets& b, std::string_view key, std::string_view feature, double estimate,
             double cost, Budgets::Time t) {
  auto r = b.Reserve(key, feature, estimate, t);
  if (!r.ok()) return r.status();
  b.Settle(*r, key, feature, cost, t);
  return Status::Ok();
}

TEST_F(BudgetsTest, RefusesWhatWouldExceedAndNamesTheBudget) {
  auto b = Open({FeatureBudget("summarize", 5, 0)});
  const auto now = At(kDec1Ms + 10 * kHour);
  ASSERT_TRUE(Spend(*b, "", "summarize", 0.5, 4.75, now).ok());
  EXPECT_TRUE(Spend(*b, "", "summarize", 0.25, 0, now).ok());  // exactly the limit is allowed
  auto over = b->Reserve("", "summarize", 0.30, now);
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(),
            "feature 'summarize' daily budget $5.00 would be exceeded: spent $4.75, this request "
            "is estimated at $0.30 (resets at 2026-12-02T00:00:00Z)");
  ASSERT_TRUE(Spend(*b, "", "summarize", 0, 0.26, now).ok());
  auto reached = b->Reserve("", "summarize", 0, now);
  EXPECT_EQ(reached.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(reached.status().message(),
            "feature 'summarize' daily budget $5.00 reached: spent $5.01 (resets at "
            "2026-12-02T00:00:00Z)");
  // Other features and no feature are not limited, and hold nothing.
  auto free = b->Reserve("", "chat", 100, now);
  ASSERT_TRUE(free.ok());
  EXPECT_TRUE(free->id.empty());
  EXPECT_TRUE(b->Reserve("", "", 100, now).ok());
}

TEST_F(BudgetsTest, RequestsInFlightHoldTheirEstimates) {
  auto b = Open({KeyBudget("ci", 1, 0)});
  const auto now = At(kDec1Ms + kHour);
  auto first = b->Reserve("ci", "", 0.6, now);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->id.empty());
  // The first request's 0.6 is not spent yet, but it is taken.
  auto second = b->Reserve("ci", "", 0.6, now);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("spent $0.00 (and $0.60 reserved by requests in "
                                           "flight), this request is estimated at $0.60"),
            std::string::npos)
      << second.status().message();
  // It cost less than its estimate: the rest is free again.
  b->Settle(*first, "ci", "", 0.2, now);
  EXPECT_TRUE(b->Reserve("ci", "", 0.6, now).ok());
  auto snap = b->SnapshotJson(now);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ((*snap)["data"][0]["daily"]["spent_usd"], 0.2);
  EXPECT_EQ((*snap)["data"][0]["daily"]["reserved_usd"], 0.6);
  EXPECT_DOUBLE_EQ((*snap)["data"][0]["daily"]["remaining_usd"].get<double>(), 0.2);
  // Settling twice adds the cost once.
  b->Settle(*first, "ci", "", 0.2, now);
  EXPECT_EQ((*b->SnapshotJson(now))["data"][0]["daily"]["spent_usd"], 0.2);
}

TEST_F(BudgetsTest, AReservationNeverSettledExpires) {
  auto b = Open({KeyBudget("ci", 1, 0)}, {.reservation_ttl_s = 60});
  const int64_t t = kDec1Ms + kHour;
  ASSERT_TRUE(b->Reserve("ci", "", 0.9, At(t)).ok());  // its gateway dies: never settled
  EXPECT_FALSE(b->Reserve("ci", "", 0.5, At(t + 59'000)).ok());
  EXPECT_TRUE(b->Reserve("ci", "", 0.5, At(t + 60'000)).ok());
}

TEST_F(BudgetsTest, KeyAndFeatureBudgetsAreSeparate) {
  auto b = Open({KeyBudget("team-a", 0, 10), FeatureBudget("classify", 1, 0)});
  const auto now = At(kDec1Ms + kHour);
  ASSERT_TRUE(Spend(*b, "team-a", "chat", 0, 9.5, now).ok());  // the key's, not classify's
  EXPECT_TRUE(Spend(*b, "team-b", "classify", 0.9, 0, now).ok());
  auto key = b->Reserve("team-a", "classify", 0.6, now);
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find("API key 'team-a' monthly budget $10.00 would be exceeded"),
            std::string::npos)
      << key.status().message();
  ASSERT_TRUE(Spend(*b, "team-b", "classify", 0, 0.95, now).ok());
  auto feature = b->Reserve("team-c", "classify", 0.1, now);
  ASSERT_FALSE(feature.ok());
  EXPECT_NE(feature.status().message().find("feature 'classify' daily budget $1.00"),
            std::string::npos)
      << feature.status().message();
  EXPECT_TRUE(Spend(*b, "team-a", "chat", 0.4, 0, now).ok());
  // A key that has no budget is not limited; a negative or NaN estimate counts as 0.
  EXPECT_TRUE(b->Reserve("team-z", "chat", 1e9, now).ok());
  EXPECT_TRUE(Spend(*b, "team-a", "chat", -5, 0, now).ok());
  EXPECT_TRUE(Spend(*b, "team-a", "chat", std::nan(""), 0, now).ok());
}

TEST_F(BudgetsTest, TheDayRollsOverAtUtcMidnightAndTheMonthOnTheFirst) {
  auto b = Open({FeatureBudget("chat", 2, 3)});
  const int64_t nov30_late = kDec1Ms - 60'000;  // 2026-11-30T23:59:00Z
  ASSERT_TRUE(Spend(*b, "", "chat", 0, 1.9, At(nov30_late)).ok());
  EXPECT_FALSE(b->Reserve("", "chat", 0.2, At(nov30_late)).ok());  // daily: 1.9 + 0.2 > 2
  // Midnight, the first of the month: both windows start over.
  EXPECT_TRUE(Spend(*b, "", "chat", 1.9, 0, At(kDec1Ms)).ok());
  ASSERT_TRUE(Spend(*b, "", "chat", 0, 1.5, At(kDec1Ms + kHour)).ok());
  // The next day: daily resets, monthly keeps December's 1.5.
  const int64_t dec2 = kDec1Ms + kMsPerDay;
  EXPECT_TRUE(Spend(*b, "", "chat", 1.4, 1.4, At(dec2 + kHour)).ok());
  auto monthly = b->Reserve("", "chat", 0.2, At(dec2 + 2 * kHour));
  ASSERT_FALSE(monthly.ok());
  EXPECT_NE(monthly.status().message().find("monthly budget $3.00 would be exceeded: spent $2.90"),
            std::string::npos)
      << monthly.status().message();
  EXPECT_NE(monthly.status().message().find("resets at 2027-01-01T00:00:00Z"), std::string::npos);
  EXPECT_TRUE(b->Reserve("", "chat", 1.9, At(UtcNextMonthStartMs(dec2))).ok());
}

TEST_F(BudgetsTest, ARequestFromBeforeMidnightIsChargedToItsOwnDay) {
  auto b = Open({FeatureBudget("chat", 1, 10)});
  auto r = b->Reserve("", "chat", 0, At(kDec1Ms - 1000));  // arrived Nov 30
  ASSERT_TRUE(r.ok());
  b->Settle(*r, "", "chat", 0.9, At(kDec1Ms - 1000));  // finished after midnight
  EXPECT_TRUE(b->Reserve("", "chat", 0.95, At(kDec1Ms + 2000)).ok());
  auto snap = b->SnapshotJson(At(kDec1Ms + 2000));
  EXPECT_EQ((*snap)["data"][0]["daily"]["spent_usd"], 0.0);
  EXPECT_EQ((*snap)["data"][0]["monthly"]["spent_usd"], 0.0);  // November's, not December's
}

TEST_F(BudgetsTest, RepeatedEntriesKeepTheStrictestLimits) {
  auto b = Open(
      {FeatureBudget("chat", 5, 0), FeatureBudget("chat", 0, 50), FeatureBudget("chat", 3, 80)});
  auto snap = b->SnapshotJson(At(kDec1Ms));
  ASSERT_EQ((*snap)["data"].size(), 1u);
  EXPECT_EQ((*snap)["data"][0]["daily"]["limit_usd"], 3.0);
  EXPECT_EQ((*snap)["data"][0]["monthly"]["limit_usd"], 50.0);
}

TEST_F(BudgetsTest, SnapshotShowsLimitsSpendAndResets) {
  auto b = Open({KeyBudget("ci", 2, 0), FeatureBudget("summarize", 0, 100)});
  EXPECT_FALSE(b->empty());
  const auto now = At(kDec1Ms + 5 * kHour);
  ASSERT_TRUE(Spend(*b, "ci", "summarize", 0, 0.5, now).ok());
  auto snap = b->SnapshotJson(now);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->dump(),
            R"({"object":"budgets","data":[)"
            R"({"kind":"key","name":"ci","daily":{"limit_usd":2.0,"spent_usd":0.5,)"
            R"("reserved_usd":0.0,"remaining_usd":1.5,"resets_at":"2026-12-02T00:00:00Z"},)"
            R"("monthly":null},)"
            R"({"kind":"feature","name":"summarize","daily":null,"monthly":{"limit_usd":100.0,)"
            R"("spent_usd":0.5,"reserved_usd":0.0,"remaining_usd":99.5,)"
            R"("resets_at":"2027-01-01T00:00:00Z"}}]})");
}

TEST_F(BudgetsTest, ASnapshotForOneTenantHasItsKeysAndNoFeatures) {
  auto b = Open({KeyBudget("a-ci", 2, 0), KeyBudget("a-web", 3, 0), KeyBudget("b-ci", 4, 0),
                 FeatureBudget("summarize", 0, 100)});
  const std::vector<std::string> tenant_a = {"a-ci", "a-web"};
  const auto snap = b->SnapshotJson(At(kDec1Ms), &tenant_a);
  ASSERT_EQ((*snap)["data"].size(), 2u);
  EXPECT_EQ((*snap)["data"][0]["name"], "a-ci");
  EXPECT_EQ((*snap)["data"][1]["name"], "a-web");
  const std::vector<std::string> none;
  EXPECT_TRUE((*b->SnapshotJson(At(kDec1Ms), &none))["data"].empty());
  EXPECT_EQ((*b->SnapshotJson(At(kDec1Ms)))["data"].size(), 4u);  // every budget
}

TEST_F(BudgetsTest, WindowsStartFromTheLedgersSpend) {
  const int64_t now = kDec1Ms + 3 * kMsPerDay + 12 * kHour;  // Dec 4, noon
  std::vector<LedgerRow> rows;
  auto add = [&](const char* id, int64_t t, const char* key, const char* feature, double cost) {
    LedgerRow r = test::Row(id, t, feature);
    r.api_key_name = key;
    r.cost_usd = cost;
    rows.push_back(r);
  };
  add("a", now - kHour, "ci", "summarize", 1.0);             // today
  add("b", UtcDayStartMs(now), "ci", "chat", 2.0);           // today, at midnight
  add("c", UtcDayStartMs(now) - 1, "ci", "summarize", 4.0);  // yesterday
  add("d", kDec1Ms, "other", "summarize", 8.0);              // this month
  add("e", kDec1Ms - 1, "ci", "summarize", 16.0);            // last month
  // Shadow copies of each (a rollout's candidate): the operator's cost, never the callers'.
  for (size_t i = 0; i < 5; ++i) {
    LedgerRow s = rows[i];
    s.request_id += "-shadow";
    s.shadow = true;
    s.rollout = "r1";
    s.cost_usd = 100 * s.cost_usd + 0.5;
    rows.push_back(s);
  }
  ASSERT_EQ(test::AppendAll(*ledger_, rows), 10);
  auto b = Open({KeyBudget("ci", 100, 1000), FeatureBudget("summarize", 100, 1000),
                 FeatureBudget("unused", 1, 1)});
  const auto snap = *b->SnapshotJson(At(now));
  ASSERT_EQ(snap["data"].size(), 3u);
  EXPECT_EQ(snap["data"][0]["name"], "ci");
  EXPECT_EQ(snap["data"][0]["daily"]["spent_usd"], 3.0);
  EXPECT_EQ(snap["data"][0]["monthly"]["spent_usd"], 7.0);
  EXPECT_EQ(snap["data"][1]["name"], "summarize");
  EXPECT_EQ(snap["data"][1]["daily"]["spent_usd"], 1.0);
  EXPECT_EQ(snap["data"][1]["monthly"]["spent_usd"], 13.0);
  EXPECT_EQ(snap["data"][2]["monthly"]["spent_usd"], 0.0);
  // Spend from the ledger counts against the limits.
  auto tight = Open({KeyBudget("ci", 3.5, 0)});
  EXPECT_FALSE(tight->Reserve("ci", "", 0.6, At(now)).ok());
  EXPECT_TRUE(tight->Reserve("ci", "", 0.4, At(now)).ok());
}

// Two gateways (two Budgets on one database), four threads each, race to
// admit requests against one limit: the estimates admitted never add up to
// more than the limit, and every admission is a reservation someone settles.
void RaceTwoGateways(Budgets& a, Budgets& b) {
  const auto now = At(kDec1Ms + kHour);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Budgets& g = t % 2 ? a : b;
      for (int i = 0; i < 20; ++i) {
        auto r = g.Reserve("ci", "chat", 0.25, now);
        if (!r.ok()) {
          EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
          continue;
        }
        ++admitted;
        // In flight a while, so other admissions must see this reservation.
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        g.Settle(*r, "ci", "chat", 0.25, now);  // cost == estimate
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 40);  // exactly $10 / $0.25: no overshoot, no headroom left
  auto snap = a.SnapshotJson(now);
  ASSERT_TRUE(snap.ok());
  EXPECT_DOUBLE_EQ((*snap)["data"][0]["daily"]["spent_usd"].get<double>(), 10.0);
  EXPECT_EQ((*snap)["data"][0]["daily"]["reserved_usd"], 0.0);
}

TEST_F(BudgetsTest, TwoGatewaysOnOneSqliteFileNeverOvershoot) {
  auto a = Open({KeyBudget("ci", 10, 0)});
  auto b = Open({KeyBudget("ci", 10, 0)});
  RaceTwoGateways(*a, *b);
}

class PostgresBudgetsTest : public test::PostgresTest {};

TEST_F(PostgresBudgetsTest, TwoGatewaysRacingNeverOvershoot) {
  {
    auto ledger = OpenLedger(url_);  // creates brisk_ledger
    ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
  }
  std::unique_ptr<Budgets> g[2];
  for (auto& b : g) {
    auto db = OpenSqlDb(url_);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto opened = Budgets::Open({KeyBudget("ci", 10, 0)}, std::move(db).value(), {});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    b = std::move(opened).value();
  }
  RaceTwoGateways(*g[0], *g[1]);
}

}  // namespace
}  // namespace brisk::gateway
