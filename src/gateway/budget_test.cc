#include "gateway/budget.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "gateway/ledger_test_util.h"
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

TEST(BudgetsTest, RefusesWhatWouldExceedAndNamesTheBudget) {
  Budgets b({FeatureBudget("summarize", 5, 0)});
  const auto now = At(kDec1Ms + 10 * kHour);
  EXPECT_TRUE(b.Check("", "summarize", 0.5, now).ok());
  b.Record("", "summarize", 4.75, now);
  EXPECT_TRUE(b.Check("", "summarize", 0.25, now).ok());  // exactly the limit is allowed
  Status over = b.Check("", "summarize", 0.30, now);
  EXPECT_EQ(over.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(over.message(),
            "feature 'summarize' daily budget $5.00 would be exceeded: spent $4.75, this request "
            "is estimated at $0.30 (resets at 2026-12-02T00:00:00Z)");
  b.Record("", "summarize", 0.26, now);
  Status reached = b.Check("", "summarize", 0, now);
  EXPECT_EQ(reached.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(reached.message(),
            "feature 'summarize' daily budget $5.00 reached: spent $5.01 (resets at "
            "2026-12-02T00:00:00Z)");
  // Other features and no feature are not limited.
  EXPECT_TRUE(b.Check("", "chat", 100, now).ok());
  EXPECT_TRUE(b.Check("", "", 100, now).ok());
}

TEST(BudgetsTest, KeyAndFeatureBudgetsAreSeparate) {
  Budgets b({KeyBudget("team-a", 0, 10), FeatureBudget("classify", 1, 0)});
  const auto now = At(kDec1Ms + kHour);
  b.Record("team-a", "chat", 9.5, now);  // the key's spend, not classify's
  EXPECT_TRUE(b.Check("team-b", "classify", 0.9, now).ok());
  Status key = b.Check("team-a", "classify", 0.6, now);
  EXPECT_EQ(key.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(key.message().find("API key 'team-a' monthly budget $10.00 would be exceeded"),
            std::string::npos)
      << key.message();
  b.Record("team-b", "classify", 0.95, now);  // the feature's spend, not team-a's
  Status feature = b.Check("team-c", "classify", 0.1, now);
  EXPECT_NE(feature.message().find("feature 'classify' daily budget $1.00"), std::string::npos)
      << feature.message();
  EXPECT_TRUE(b.Check("team-a", "chat", 0.4, now).ok());
  // A key that has no budget is not limited; a negative or NaN estimate counts as 0.
  EXPECT_TRUE(b.Check("team-z", "chat", 1e9, now).ok());
  EXPECT_TRUE(b.Check("team-a", "chat", -5, now).ok());
  EXPECT_TRUE(b.Check("team-a", "chat", std::nan(""), now).ok());
}

TEST(BudgetsTest, TheDayRollsOverAtUtcMidnightAndTheMonthOnTheFirst) {
  Budgets b({FeatureBudget("chat", 2, 3)});
  const int64_t nov30_late = kDec1Ms - 60'000;  // 2026-11-30T23:59:00Z
  b.Record("", "chat", 1.9, At(nov30_late));
  EXPECT_FALSE(b.Check("", "chat", 0.2, At(nov30_late)).ok());  // daily: 1.9 + 0.2 > 2
  // Midnight, the first of the month: both windows start over.
  EXPECT_TRUE(b.Check("", "chat", 1.9, At(kDec1Ms)).ok());
  b.Record("", "chat", 1.5, At(kDec1Ms + kHour));
  // The next day: daily resets, monthly keeps December's 1.5.
  const int64_t dec2 = kDec1Ms + kMsPerDay;
  EXPECT_TRUE(b.Check("", "chat", 1.4, At(dec2)).ok());
  b.Record("", "chat", 1.4, At(dec2 + kHour));
  Status monthly = b.Check("", "chat", 0.2, At(dec2 + 2 * kHour));
  EXPECT_NE(monthly.message().find("monthly budget $3.00 would be exceeded: spent $2.90"),
            std::string::npos)
      << monthly.message();
  EXPECT_NE(monthly.message().find("resets at 2027-01-01T00:00:00Z"), std::string::npos);
  EXPECT_TRUE(b.Check("", "chat", 1.9, At(UtcNextMonthStartMs(dec2))).ok());
}

TEST(BudgetsTest, ARequestFromBeforeMidnightIsChargedToItsOwnDay) {
  Budgets b({FeatureBudget("chat", 1, 10)});
  EXPECT_TRUE(b.Check("", "chat", 0, At(kDec1Ms + 1000)).ok());  // the day rolls to Dec 1
  b.Record("", "chat", 0.9, At(kDec1Ms - 1000));  // arrived Nov 30, finished after midnight
  EXPECT_TRUE(b.Check("", "chat", 0.95, At(kDec1Ms + 2000)).ok());
  auto snap = b.SnapshotJson(At(kDec1Ms + 2000));
  EXPECT_EQ(snap["data"][0]["daily"]["spent_usd"], 0.0);
  EXPECT_EQ(snap["data"][0]["monthly"]["spent_usd"], 0.0);  // November's, not December's
}

TEST(BudgetsTest, RepeatedEntriesKeepTheStrictestLimits) {
  Budgets b(
      {FeatureBudget("chat", 5, 0), FeatureBudget("chat", 0, 50), FeatureBudget("chat", 3, 80)});
  auto snap = b.SnapshotJson(At(kDec1Ms));
  ASSERT_EQ(snap["data"].size(), 1u);
  EXPECT_EQ(snap["data"][0]["daily"]["limit_usd"], 3.0);
  EXPECT_EQ(snap["data"][0]["monthly"]["limit_usd"], 50.0);
}

TEST(BudgetsTest, SnapshotShowsLimitsSpendAndResets) {
  Budgets b({KeyBudget("ci", 2, 0), FeatureBudget("summarize", 0, 100)});
  EXPECT_FALSE(b.empty());
  const auto now = At(kDec1Ms + 5 * kHour);
  b.Record("ci", "summarize", 0.5, now);
  const nlohmann::ordered_json snap = b.SnapshotJson(now);
  EXPECT_EQ(snap.dump(),
            R"({"object":"budgets","data":[)"
            R"({"kind":"key","name":"ci","daily":{"limit_usd":2.0,"spent_usd":0.5,)"
            R"("remaining_usd":1.5,"resets_at":"2026-12-02T00:00:00Z"},"monthly":null},)"
            R"({"kind":"feature","name":"summarize","daily":null,"monthly":{"limit_usd":100.0,)"
            R"("spent_usd":0.5,"remaining_usd":99.5,"resets_at":"2027-01-01T00:00:00Z"}}]})");
  EXPECT_TRUE(Budgets({}).empty());
}

TEST(BudgetsTest, ASnapshotForOneTenantHasItsKeysAndNoFeatures) {
  Budgets b({KeyBudget("a-ci", 2, 0), KeyBudget("a-web", 3, 0), KeyBudget("b-ci", 4, 0),
             FeatureBudget("summarize", 0, 100)});
  const std::vector<std::string> tenant_a = {"a-ci", "a-web"};
  const auto snap = b.SnapshotJson(At(kDec1Ms), &tenant_a);
  ASSERT_EQ(snap["data"].size(), 2u);
  EXPECT_EQ(snap["data"][0]["name"], "a-ci");
  EXPECT_EQ(snap["data"][1]["name"], "a-web");
  const std::vector<std::string> none;
  EXPECT_TRUE(b.SnapshotJson(At(kDec1Ms), &none)["data"].empty());
  EXPECT_EQ(b.SnapshotJson(At(kDec1Ms))["data"].size(), 4u);  // every budget
}

TEST(BudgetsTest, ConcurrentRecordsAddUp) {
  Budgets b({KeyBudget("k", 0, 1e9)});
  const auto now = At(kDec1Ms);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        b.Record("k", "f", 0.25, now);
        (void)b.Check("k", "f", 0.01, now);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(b.SnapshotJson(now)["data"][0]["monthly"]["spent_usd"], 10000.0);
}

TEST(BudgetsTest, ARowsCostIsRecordedUnlessItIsAShadow) {
  Budgets b({KeyBudget("ci", 10, 0), FeatureBudget("summarize", 10, 0)});
  const int64_t now = kDec1Ms + 10 * kHour;
  LedgerRow row = test::Row("x", now, "summarize");
  row.api_key_name = "ci";
  row.cost_usd = 2;
  row.rollout = "r1";  // served by a canary: still the caller's spend
  b.Record(row);
  LedgerRow shadow = row;
  shadow.request_id = "x-shadow";
  shadow.shadow = true;
  shadow.cost_usd = 9;
  b.Record(shadow);
  const auto snap = b.SnapshotJson(At(now));
  ASSERT_EQ(snap["data"].size(), 2u);
  EXPECT_EQ(snap["data"][0]["daily"]["spent_usd"], 2.0);  // key ci
  EXPECT_EQ(snap["data"][1]["daily"]["spent_usd"], 2.0);  // feature summarize
}

TEST(BudgetsTest, LoadStartsFromTheLedgersSpend) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "brisk-budget-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  {
    auto ledger = OpenLedger(dir + "/ledger.db");
    ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
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
    // Shadow copies of each (a rollout's candidate): the operator's cost,
    // never the callers' spend.
    for (size_t i = 0; i < 5; ++i) {
      LedgerRow s = rows[i];
      s.request_id += "-shadow";
      s.shadow = true;
      s.rollout = "r1";
      s.cost_usd = 100 * s.cost_usd + 0.5;
      rows.push_back(s);
    }
    ASSERT_EQ(test::AppendAll(**ledger, rows), 10);

    Budgets b({KeyBudget("ci", 100, 1000), FeatureBudget("summarize", 100, 1000),
               FeatureBudget("unused", 1, 1)});
    ASSERT_TRUE(b.Load(**ledger, At(now)).ok());
    const auto snap = b.SnapshotJson(At(now));
    ASSERT_EQ(snap["data"].size(), 3u);
    EXPECT_EQ(snap["data"][0]["name"], "ci");
    EXPECT_EQ(snap["data"][0]["daily"]["spent_usd"], 3.0);
    EXPECT_EQ(snap["data"][0]["monthly"]["spent_usd"], 7.0);
    EXPECT_EQ(snap["data"][1]["name"], "summarize");
    EXPECT_EQ(snap["data"][1]["daily"]["spent_usd"], 1.0);
    EXPECT_EQ(snap["data"][1]["monthly"]["spent_usd"], 13.0);
    EXPECT_EQ(snap["data"][2]["monthly"]["spent_usd"], 0.0);
    // Spend from the ledger counts against the limits.
    Budgets tight({KeyBudget("ci", 3.5, 0)});
    ASSERT_TRUE(tight.Load(**ledger, At(now)).ok());
    EXPECT_FALSE(tight.Check("ci", "", 0.6, At(now)).ok());
    EXPECT_TRUE(tight.Check("ci", "", 0.4, At(now)).ok());
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace brisk::gateway
