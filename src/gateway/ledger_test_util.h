// For tests only: the ledger contract both stores must keep (SQLite in
// ledger_test.cc, PostgreSQL in postgres_ledger_test.cc), as functions over an
// open Ledger, with the expected rollups recomputed here from the rows'
// tokens and the tiers' prices.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gateway/cost.h"
#include "gateway/ledger.h"
#include "gateway/utc_time.h"

namespace brisk::gateway::test {

// 2026-12-01T00:00:00Z
inline constexpr int64_t kDec1Ms = 1'796'083'200'000;

inline Prices TierPrices(const std::string& tier) {
  if (tier == "small") return {0.10, 0.05, 0.40};
  if (tier == "medium") return {0.50, 0.25, 1.50};
  return {3.00, 0.30, 15.00};
}

inline LedgerRow Row(std::string request_id, int64_t time_ms, std::string feature = "chat",
                     std::string tier = "small", std::string tenant = "acme",
                     TokenCounts tokens = {100, 20, 50}) {
  LedgerRow r;
  r.time_unix_ms = time_ms;
  r.request_id = std::move(request_id);
  r.tenant = std::move(tenant);
  r.api_key_name = r.tenant + "-key";
  r.feature = std::move(feature);
  r.tier = std::move(tier);
  r.upstream = "127.0.0.1:9001";
  r.model = "SmolLM2-135M-Instruct.Q4_1";
  r.endpoint = "chat.completions";
  r.tokens = tokens;
  r.cost_usd = CostUsd(TierPrices(r.tier), tokens);
  r.status = 200;
  r.outcome = "completed";
  r.stream = true;
  r.ttft_ms = 12.5;
  r.total_ms = 240.25;
  r.attempts = 1;
  r.finish_reason = "stop";
  return r;
}

// Rows spread over `days` UTC days from `start_ms`, over 4 features (one
// ""), 3 tiers, 3 tenants; some escalated.
inline std::vector<LedgerRow> MixedRows(int n, uint32_t seed, int64_t start_ms, int days) {
  std::mt19937 rng(seed);
  const char* features[] = {"summarize", "classify", "chat", ""};
  const char* tiers[] = {"small", "medium", "large"};
  const char* tenants[] = {"acme", "globex", "initech"};
  std::vector<LedgerRow> rows;
  for (int i = 0; i < n; ++i) {
    const int64_t t = start_ms +
                      static_cast<int64_t>(rng() % static_cast<uint32_t>(days)) * kMsPerDay +
                      static_cast<int64_t>(rng() % static_cast<uint32_t>(kMsPerDay));
    const int64_t prompt = rng() % 4000;
    TokenCounts tokens{prompt,
                       prompt ? static_cast<int64_t>(rng() % static_cast<uint32_t>(prompt)) : 0,
                       static_cast<int64_t>(rng() % 800)};
    LedgerRow r = Row(fmt::format("req-{}-{}", seed, i), t, features[rng() % 4], tiers[rng() % 3],
                      tenants[rng() % 3], tokens);
    r.escalations = static_cast<int32_t>(rng() % 5 == 0 ? 1 + rng() % 2 : 0);
    rows.push_back(std::move(r));
  }
  return rows;
}

// The rollup recomputed from the rows: costs from tokens and tier prices
// (not from the rows' cost_usd).
inline std::vector<CostGroup> ExpectedRollup(const std::vector<LedgerRow>& rows,
                                             const CostQuery& q) {
  std::map<std::pair<std::string, std::string>, CostGroup> m;  // (day, key)
  for (const LedgerRow& r : rows) {
    if (r.time_unix_ms < q.from_unix_ms || r.time_unix_ms >= q.to_unix_ms) continue;
    if (q.shadow == ShadowFilter::kExclude && r.shadow) continue;
    if (q.shadow == ShadowFilter::kOnly && !r.shadow) continue;
    if (q.tenant && r.tenant != *q.tenant) continue;
    const std::string& key = q.group_by == GroupBy::kFeature  ? r.feature
                             : q.group_by == GroupBy::kTier   ? r.tier
                             : q.group_by == GroupBy::kTenant ? r.tenant
                                                              : r.rollout;
    const std::string day = q.by_day ? FormatUtcDate(r.time_unix_ms) : "";
    CostGroup& g = m[{day, key}];
    g.key = key;
    g.day = day;
    ++g.requests;
    g.tokens += r.tokens;
    g.cost_usd += CostUsd(TierPrices(r.tier), r.tokens);
    g.escalations += r.escalations;
  }
  std::vector<CostGroup> out;
  for (auto& [k, g] : m) out.push_back(g);
  return out;
}

inline void ExpectSameGroups(const std::vector<CostGroup>& got,
                             const std::vector<CostGroup>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("group " + want[i].day + " '" + want[i].key + "'");
    EXPECT_EQ(got[i].key, want[i].key);
    EXPECT_EQ(got[i].day, want[i].day);
    EXPECT_EQ(got[i].requests, want[i].requests);
    EXPECT_EQ(got[i].tokens.prompt, want[i].tokens.prompt);
    EXPECT_EQ(got[i].tokens.cached, want[i].tokens.cached);
    EXPECT_EQ(got[i].tokens.output, want[i].tokens.output);
    EXPECT_NEAR(got[i].cost_usd, want[i].cost_usd, 1e-9);
    EXPECT_EQ(got[i].escalations, want[i].escalations);
  }
}

// Appends every row; returns how many callbacks said ok (after Flush).
inline int AppendAll(Ledger& ledger, const std::vector<LedgerRow>& rows) {
  auto ok = std::make_shared<std::atomic<int>>(0);
  for (const LedgerRow& r : rows) {
    ledger.Append(r, [ok](const Status& st) {
      if (st.ok()) ++*ok;
    });
  }
  ledger.Flush();
  return ok->load();
}

// --- The contract ------------------------------------------------------------

// N appends -> N rows after Flush, every callback ok.
inline void CheckAppendFlushCount(Ledger& ledger) {
  const std::vector<LedgerRow> rows = MixedRows(250, 1, kDec1Ms, 3);
  EXPECT_EQ(AppendAll(ledger, rows), 250);
  auto n = ledger.CountRows();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 250);
  const LedgerStats stats = ledger.Stats();
  EXPECT_EQ(stats.rows_appended, 250);
  EXPECT_EQ(stats.rows_committed, 250);
  EXPECT_EQ(stats.rows_failed, 0);
  EXPECT_GE(stats.transactions, 1);
}

// A request_id already present is not written twice, in a later batch or in
// the same one, and its callback still says ok.
inline void CheckDuplicatesIgnored(Ledger& ledger) {
  LedgerRow first = Row("dup-1", kDec1Ms);
  EXPECT_EQ(AppendAll(ledger, {first}), 1);
  LedgerRow again = Row("dup-1", kDec1Ms + 5, "other", "large");  // a retry's second write
  EXPECT_EQ(AppendAll(ledger, {again}), 1);
  // Same batch: hold the writer in a callback while both are queued.
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  ledger.Append(Row("gate", kDec1Ms), [&](const Status&) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release; });
  });
  std::atomic<int> ok{0};
  for (int i = 0; i < 3; ++i) {
    ledger.Append(Row("dup-2", kDec1Ms + i), [&](const Status& st) {
      if (st.ok()) ++ok;
    });
  }
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  ledger.Flush();
  EXPECT_EQ(ok.load(), 3);
  auto n = ledger.CountRows();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 3);  // dup-1, gate, dup-2
  // The first write wins: the rollup still has dup-1 as "chat" on "small".
  CostQuery q;
  q.group_by = GroupBy::kTier;
  auto groups = ledger.Query(q);
  ASSERT_TRUE(groups.ok()) << groups.status().ToString();
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].key, "small");
  EXPECT_EQ((*groups)[0].requests, 3);
}

// Rollups by feature, tier and tenant, with and without days, whole range and
// a window, equal the sums recomputed from the rows.
inline void CheckRollups(Ledger& ledger) {
  const std::vector<LedgerRow> rows = MixedRows(600, 7, kDec1Ms - 2 * kMsPerDay, 5);
  ASSERT_EQ(AppendAll(ledger, rows), 600);
  for (GroupBy g : {GroupBy::kFeature, GroupBy::kTier, GroupBy::kTenant}) {
    for (bool by_day : {false, true}) {
      for (auto [from, to] : {std::pair<int64_t, int64_t>{0, INT64_MAX},
                              {kDec1Ms - kMsPerDay + 3'600'000, kDec1Ms + kMsPerDay}}) {
        CostQuery q;
        q.group_by = g;
        q.by_day = by_day;
        q.from_unix_ms = from;
        q.to_unix_ms = to;
        SCOPED_TRACE(::testing::Message() << "group_by " << static_cast<int>(g) << " by_day "
                                          << by_day << " from " << from);
        auto got = ledger.Query(q);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        ExpectSameGroups(*got, ExpectedRollup(rows, q));
      }
    }
  }
  // One tenant's rows alone (what a tenant's key reads through GET /v1/cost).
  for (const char* tenant : {"acme", "globex", "nobody"}) {
    for (GroupBy g : {GroupBy::kFeature, GroupBy::kTenant}) {
      CostQuery q;
      q.group_by = g;
      q.by_day = true;
      q.tenant = tenant;
      SCOPED_TRACE(::testing::Message() << "tenant " << tenant);
      auto got = ledger.Query(q);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ExpectSameGroups(*got, ExpectedRollup(rows, q));
      if (g == GroupBy::kTenant) {
        for (const CostGroup& group : *got) EXPECT_EQ(group.key, tenant);
      }
    }
  }
  // An empty range has no groups.
  CostQuery empty;
  empty.from_unix_ms = kDec1Ms + 10 * kMsPerDay;
  auto none = ledger.Query(empty);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// SpendSince by key name and by feature, from a time on.
inline void CheckSpendSince(Ledger& ledger) {
  std::vector<LedgerRow> rows;
  double key_total = 0, key_recent = 0, feature_recent = 0;
  for (int i = 0; i < 40; ++i) {
    const int64_t t = kDec1Ms - kMsPerDay + i * 3'600'000;  // hourly over 40 hours
    LedgerRow r = Row(fmt::format("spend-{}", i), t, i % 2 ? "summarize" : "chat",
                      i % 3 ? "small" : "large", i % 4 ? "acme" : "globex", {100 + i, i, 10 * i});
    if (r.api_key_name == "acme-key") {
      key_total += r.cost_usd;
      if (t >= kDec1Ms) key_recent += r.cost_usd;
    }
    if (r.feature == "summarize" && t >= kDec1Ms) feature_recent += r.cost_usd;
    rows.push_back(r);
  }
  ASSERT_EQ(AppendAll(ledger, rows), 40);
  auto all = ledger.SpendSince("acme-key", false, 0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_NEAR(*all, key_total, 1e-12);
  auto recent = ledger.SpendSince("acme-key", false, kDec1Ms);
  ASSERT_TRUE(recent.ok());
  EXPECT_NEAR(*recent, key_recent, 1e-12);
  auto feature = ledger.SpendSince("summarize", true, kDec1Ms);
  ASSERT_TRUE(feature.ok());
  EXPECT_NEAR(*feature, feature_recent, 1e-12);
  auto nobody = ledger.SpendSince("nobody", false, 0);
  ASSERT_TRUE(nobody.ok());
  EXPECT_EQ(*nobody, 0);
  // A name is a value, never SQL.
  auto injected = ledger.SpendSince("x' OR '1'='1", false, 0);
  ASSERT_TRUE(injected.ok());
  EXPECT_EQ(*injected, 0);
}

// Callers' rows, some served by rollout r1's canary, and a shadow copy of
// every third of them on the candidate tier "large" (callers' tenant, key and
// feature; the candidate's tokens and cost).
inline std::vector<LedgerRow> RowsWithShadows(int n, uint32_t seed, int64_t start_ms, int days) {
  std::vector<LedgerRow> rows = MixedRows(n, seed, start_ms, days);
  std::vector<LedgerRow> shadows;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i % 5 == 1) rows[i].rollout = "r1";  // the canary answered the caller
    if (i % 3 != 0) continue;
    LedgerRow s = rows[i];
    s.request_id += "-shadow";
    s.shadow = true;
    s.rollout = i % 2 ? "r1" : "r2";
    s.tier = "large";
    s.tokens.output += 7;
    s.cost_usd = CostUsd(TierPrices(s.tier), s.tokens);
    s.time_unix_ms += 3;
    shadows.push_back(std::move(s));
  }
  rows.insert(rows.end(), shadows.begin(), shadows.end());
  return rows;
}

// Shadow rows are apart from the callers' bill: rollups leave them out by
// default, include them or show them alone when asked, for every grouping
// (rollout included); SpendSince never counts them.
inline void CheckShadowRows(Ledger& ledger) {
  const std::vector<LedgerRow> rows = RowsWithShadows(300, 5, kDec1Ms - kMsPerDay, 3);
  ASSERT_EQ(AppendAll(ledger, rows), static_cast<int>(rows.size()));
  int shadows = 0;
  for (const LedgerRow& r : rows) shadows += r.shadow;
  ASSERT_EQ(shadows, 100);
  for (ShadowFilter f : {ShadowFilter::kExclude, ShadowFilter::kInclude, ShadowFilter::kOnly}) {
    for (GroupBy g : {GroupBy::kFeature, GroupBy::kTier, GroupBy::kTenant, GroupBy::kRollout}) {
      for (bool by_day : {false, true}) {
        CostQuery q;
        q.group_by = g;
        q.by_day = by_day;
        q.shadow = f;
        SCOPED_TRACE(::testing::Message() << "shadow " << static_cast<int>(f) << " group_by "
                                          << static_cast<int>(g) << " by_day " << by_day);
        auto got = ledger.Query(q);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        ExpectSameGroups(*got, ExpectedRollup(rows, q));
      }
    }
  }
  // By rollout, shadows only: r1 and r2 (no "" group: every shadow has one).
  CostQuery by_rollout;
  by_rollout.group_by = GroupBy::kRollout;
  by_rollout.shadow = ShadowFilter::kOnly;
  auto got = ledger.Query(by_rollout);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].key, "r1");
  EXPECT_EQ((*got)[1].key, "r2");
  EXPECT_EQ((*got)[0].requests + (*got)[1].requests, 100);
  // Budgets' spend: the callers' rows only.
  for (bool by_feature : {false, true}) {
    const std::string name = by_feature ? "summarize" : "acme-key";
    double want = 0;
    for (const LedgerRow& r : rows) {
      if (!r.shadow && (by_feature ? r.feature : r.api_key_name) == name) want += r.cost_usd;
    }
    auto spent = ledger.SpendSince(name, by_feature, 0);
    ASSERT_TRUE(spent.ok()) << spent.status().ToString();
    EXPECT_NEAR(*spent, want, 1e-9) << name;
  }
}

// The rollup grouped by `g` with shadow filter `f`; empty (and a failure)
// when the query fails.
inline std::vector<CostGroup> QueryGroups(Ledger& ledger, ShadowFilter f,
                                          GroupBy g = GroupBy::kFeature) {
  CostQuery q;
  q.shadow = f;
  q.group_by = g;
  auto got = ledger.Query(q);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  return got.ok() ? *got : std::vector<CostGroup>{};
}

// A table from before rollouts holding one row, old-1 (acme-key, "chat",
// $0.25), opened read-only: the row reads as the callers' outside any rollout.
inline void CheckOlderTableReadsAsCallers(Ledger& ro) {
  auto bill = QueryGroups(ro, ShadowFilter::kExclude);
  ASSERT_EQ(bill.size(), 1u);
  EXPECT_EQ(bill[0].cost_usd, 0.25);
  EXPECT_TRUE(QueryGroups(ro, ShadowFilter::kOnly).empty());
  auto by_rollout = QueryGroups(ro, ShadowFilter::kInclude, GroupBy::kRollout);
  ASSERT_EQ(by_rollout.size(), 1u);
  EXPECT_EQ(by_rollout[0].key, "");
  EXPECT_EQ(*ro.SpendSince("acme-key", false, 0), 0.25);
}

// The same table once upgraded (opened read-write): a shadow row of rollout
// r1 appended to it stays apart from old-1's bill and budget.
inline void CheckShadowOnUpgradedTable(Ledger& ledger) {
  LedgerRow shadow = Row("old-1-shadow", kDec1Ms + 1, "chat", "large");
  shadow.shadow = true;
  shadow.rollout = "r1";
  EXPECT_EQ(AppendAll(ledger, {shadow}), 1);
  EXPECT_EQ(*ledger.CountRows(), 2);
  auto bill = QueryGroups(ledger, ShadowFilter::kExclude);
  ASSERT_EQ(bill.size(), 1u);
  EXPECT_EQ(bill[0].requests, 1);
  EXPECT_EQ(bill[0].cost_usd, 0.25);
  auto only = QueryGroups(ledger, ShadowFilter::kOnly, GroupBy::kRollout);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].key, "r1");
  EXPECT_NEAR(only[0].cost_usd, shadow.cost_usd, 1e-12);
  EXPECT_EQ(*ledger.SpendSince("acme-key", false, 0), 0.25);
}

// Every callback fires after its row is readable (through `reader`, another
// connection to the same ledger) and with ok.
inline void CheckCallbacksAfterCommit(Ledger& ledger, Ledger& reader) {
  std::atomic<int> ok{0}, visible{0};
  for (int i = 0; i < 30; ++i) {
    LedgerRow r = Row(fmt::format("durable-{}", i), kDec1Ms);
    r.api_key_name = fmt::format("key-{}", i);  // makes the row findable by SpendSince
    const std::string key = r.api_key_name;
    const double cost = r.cost_usd;
    ledger.Append(std::move(r), [&, key, cost](const Status& st) {
      if (st.ok()) ++ok;
      auto spent = reader.SpendSince(key, false, 0);
      if (spent.ok() && *spent == cost) ++visible;
    });
  }
  ledger.Flush();
  EXPECT_EQ(ok.load(), 30);
  EXPECT_EQ(visible.load(), 30);
}

// 10,000 rows: all committed, in a handful of transactions. The writer is held
// in the first row's callback while the rest queue, so the count does not
// depend on timing: 1 + ceil(9,999 / kLedgerMaxBatchRows).
inline void CheckLargeBatch(Ledger& ledger) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  ledger.Append(Row("big-0", kDec1Ms), [&](const Status&) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release; });
  });
  std::vector<LedgerRow> rows = MixedRows(9999, 11, kDec1Ms, 2);
  auto ok = std::make_shared<std::atomic<int>>(0);
  for (LedgerRow& r : rows) {
    ledger.Append(std::move(r), [ok](const Status& st) {
      if (st.ok()) ++*ok;
    });
  }
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  ledger.Flush();
  EXPECT_EQ(ok->load(), 9999);
  auto n = ledger.CountRows();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 10000);
  const int64_t max_transactions = 1 + (9999 + kLedgerMaxBatchRows - 1) / kLedgerMaxBatchRows;
  EXPECT_LE(ledger.Stats().transactions, max_transactions);
  EXPECT_EQ(ledger.Stats().rows_committed, 10000);
}

// Text that is not valid UTF-8 (or has NULs) is stored as valid UTF-8.
inline void CheckTextCleaned(Ledger& ledger) {
  LedgerRow r = Row("bytes", kDec1Ms, std::string("sum\xff\xfe", 5) + std::string(1, '\0') + "x");
  EXPECT_EQ(AppendAll(ledger, {r}), 1);
  auto groups = ledger.Query(CostQuery{});
  ASSERT_TRUE(groups.ok()) << groups.status().ToString();
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].key, "sum\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDx");
}

}  // namespace brisk::gateway::test
