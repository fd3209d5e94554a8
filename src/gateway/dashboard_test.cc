#include "gateway/dashboard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <regex>
#include <thread>

#include "gateway/dashboard_page.h"

namespace brisk::gateway {
namespace {

using Clock = DashboardStats::Clock;
using std::chrono::seconds;
using Json = nlohmann::json;

LedgerRow Row(const std::string& tier, double ttft_ms, double total_ms, int64_t output,
              bool stream = true, const std::string& outcome = "completed", int escalations = 0) {
  LedgerRow r;
  r.tier = tier;
  r.ttft_ms = ttft_ms;
  r.total_ms = total_ms;
  r.tokens.output = output;
  r.stream = stream;
  r.outcome = outcome;
  r.escalations = escalations;
  return r;
}

// The p-quantile by nearest rank, computed another way: the smallest k with
// k / n >= p (1-based), on a sorted copy.
double ExpectedQuantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  size_t k = 1;
  while (k < n && static_cast<double>(k) < p * static_cast<double>(n) - 1e-9) ++k;
  return v[k - 1];
}

TEST(NearestRank, RanksAndEdges) {
  std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(NearestRank(v, 0.5), 5);
  EXPECT_EQ(NearestRank(v, 0.95), 10);
  EXPECT_EQ(NearestRank(v, 0.99), 10);
  EXPECT_EQ(NearestRank(v, 0.1), 1);
  EXPECT_EQ(NearestRank(v, 0.11), 2);
  EXPECT_EQ(NearestRank(v, 0.0), 1);  // rank clamped to 1
  EXPECT_EQ(NearestRank(v, 1.0), 10);
  EXPECT_EQ(NearestRank({42}, 0.99), 42);
  EXPECT_FALSE(NearestRank({}, 0.5).has_value());
}

TEST(DashboardStats, QuantilesMatchSortedSamples) {
  const auto t0 = Clock::now();
  DashboardStats stats(seconds(300), 4096, t0);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> ttft_dist(5, 900), gap_dist(1, 60);
  std::uniform_int_distribution<int> out_dist(1, 40);
  std::vector<double> ttft, tpot, e2e;
  for (int i = 0; i < 997; ++i) {
    const double ttft_ms = ttft_dist(rng);
    const int64_t output = out_dist(rng);
    const double total_ms = ttft_ms + static_cast<double>(output - 1) * gap_dist(rng);
    stats.Record(Row("small", ttft_ms, total_ms, output), t0 + std::chrono::milliseconds(i));
    ttft.push_back(ttft_ms);
    if (output > 1) tpot.push_back((total_ms - ttft_ms) / static_cast<double>(output - 1));
    e2e.push_back(total_ms);
  }
  Json s = stats.Snapshot({}, t0 + seconds(2))["small"];
  EXPECT_EQ(s["requests"], 997);
  for (const auto& [field, samples] :
       {std::pair{"ttft_ms", ttft}, std::pair{"tpot_ms", tpot}, std::pair{"e2e_ms", e2e}}) {
    SCOPED_TRACE(field);
    EXPECT_EQ(s[field]["count"], samples.size());
    EXPECT_DOUBLE_EQ(s[field]["p50"].get<double>(), ExpectedQuantile(samples, 0.50));
    EXPECT_DOUBLE_EQ(s[field]["p95"].get<double>(), ExpectedQuantile(samples, 0.95));
    EXPECT_DOUBLE_EQ(s[field]["p99"].get<double>(), ExpectedQuantile(samples, 0.99));
  }
}

TEST(DashboardStats, TpotFormulaAndWhichRowsCount) {
  const auto t0 = Clock::now();
  DashboardStats stats(seconds(300), 4096, t0);
  stats.Record(Row("t", 100, 400, 4), t0);  // (400 - 100) / (4 - 1) = 100 ms
  Json s = stats.Snapshot({}, t0)["t"];
  EXPECT_DOUBLE_EQ(s["tpot_ms"]["p50"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(s["ttft_ms"]["p50"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(s["e2e_ms"]["p50"].get<double>(), 400);

  DashboardStats none(seconds(300), 4096, t0);
  none.Record(Row("t", 50, 60, 1), t0);                      // one token: no spacing
  none.Record(Row("t", 80, 500, 10, /*stream=*/false), t0);  // answered at once
  none.Record(Row("t", -1, 30, 0, true, "error"), t0);       // no token reached the client
  LedgerRow shadow = Row("t", 5, 10, 3);
  shadow.shadow = true;  // a rollout's copy of a request: no caller's, not counted
  none.Record(shadow, t0);
  s = none.Snapshot({}, t0)["t"];
  EXPECT_EQ(s["requests"], 3);
  EXPECT_EQ(s["tpot_ms"]["count"], 0);
  EXPECT_TRUE(s["tpot_ms"]["p50"].is_null());
  EXPECT_EQ(s["ttft_ms"]["count"], 2);  // 50 and 80; the error row has none
  EXPECT_EQ(s["e2e_ms"]["count"], 2);   // completed ones only
  EXPECT_EQ(s["outcomes"], Json({{"completed", 2}, {"error", 1}}));
}

TEST(DashboardStats, WindowDropsOldRequests) {
  const auto t0 = Clock::now();
  DashboardStats stats(seconds(10), 4096, t0);
  stats.Record(Row("t", 1, 2, 1), t0);
  stats.Record(Row("t", 2, 3, 1), t0 + seconds(5));
  stats.Record(Row("t", 3, 4, 1), t0 + seconds(12));  // drops the one at t0
  Json s = stats.Snapshot({}, t0 + seconds(12))["t"];
  EXPECT_EQ(s["requests"], 2);
  EXPECT_DOUBLE_EQ(s["ttft_ms"]["p50"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(s["requests_per_s"].get<double>(), 2.0 / 10);
  s = stats.Snapshot({}, t0 + seconds(16))["t"];  // the one at t0 + 5 s is out too
  EXPECT_EQ(s["requests"], 1);
  s = stats.Snapshot({}, t0 + seconds(60))["t"];  // all gone; the tier stays, empty
  EXPECT_EQ(s["requests"], 0);
  EXPECT_TRUE(s["ttft_ms"]["p99"].is_null());
  EXPECT_TRUE(s["escalation_rate"].is_null());
  EXPECT_EQ(s["requests_per_s"], 0.0);
}

TEST(DashboardStats, CountBoundKeepsTheNewest) {
  const auto t0 = Clock::now();
  DashboardStats stats(seconds(300), 3, t0);
  for (int i = 0; i < 5; ++i) stats.Record(Row("t", i, i, 1), t0 + seconds(10 * i));
  Json s = stats.Snapshot({}, t0 + seconds(40))["t"];
  EXPECT_EQ(s["requests"], 3);
  EXPECT_DOUBLE_EQ(s["ttft_ms"]["p50"].get<double>(), 3);  // of {2, 3, 4}
  // The rate covers what is kept: from the oldest kept (t0 + 20 s) to now.
  EXPECT_DOUBLE_EQ(s["requests_per_s"].get<double>(), 3.0 / 20);
}

TEST(DashboardStats, RateWhileYoungerThanTheWindow) {
  const auto t0 = Clock::now();
  DashboardStats stats(seconds(300), 4096, t0);
  for (int i = 0; i < 10; ++i) stats.Record(Row("t", 1, 1, 1), t0 + seconds(i));
  EXPECT_DOUBLE_EQ(stats.Snapshot({}, t0 + seconds(20))["t"]["requests_per_s"].get<double>(),
                   10.0 / 20);
  // Never divided by less than a second.
  DashboardStats fresh(seconds(300), 4096, t0);
  fresh.Record(Row("t", 1, 1, 1), t0);
  EXPECT_DOUBLE_EQ(fresh.Snapshot({}, t0)["t"]["requests_per_s"].get<double>(), 1.0);
}

TEST(DashboardStats, EscalationsAndOutcomes) {
  const auto t0 = Clock::now();
  DashboardStats stats(seconds(300), 4096, t0);
  stats.Record(Row("small", 10, 20, 2, true, "completed", 0), t0);
  stats.Record(Row("small", 10, 20, 2, true, "completed", 2), t0);
  stats.Record(Row("small", 10, 20, 2, true, "cancelled", 0), t0);
  stats.Record(Row("small", -1, 5, 0, false, "rejected", 1), t0);
  Json s = stats.Snapshot({}, t0)["small"];
  EXPECT_EQ(s["requests"], 4);
  EXPECT_EQ(s["escalated"], 2);
  EXPECT_EQ(s["escalations"], 3);
  EXPECT_DOUBLE_EQ(s["escalation_rate"].get<double>(), 0.5);
  EXPECT_EQ(s["outcomes"], Json({{"cancelled", 1}, {"completed", 2}, {"rejected", 1}}));
  EXPECT_EQ(s["e2e_ms"]["count"], 2);
}

TEST(DashboardStats, EmptyTiersAppearWithNulls) {
  DashboardStats stats;
  Json s = stats.Snapshot({"small", "large"});
  ASSERT_EQ(s.size(), 2u);
  for (const char* tier : {"small", "large"}) {
    SCOPED_TRACE(tier);
    const Json& t = s[tier];
    EXPECT_EQ(t["requests"], 0);
    EXPECT_EQ(t["requests_per_s"], 0.0);
    EXPECT_TRUE(t["escalation_rate"].is_null());
    EXPECT_TRUE(t["outcomes"].is_object());
    EXPECT_TRUE(t["outcomes"].empty());
    for (const char* f : {"ttft_ms", "tpot_ms", "e2e_ms"}) {
      EXPECT_EQ(t[f]["count"], 0);
      EXPECT_TRUE(t[f]["p50"].is_null());
      EXPECT_TRUE(t[f]["p95"].is_null());
      EXPECT_TRUE(t[f]["p99"].is_null());
    }
  }
  EXPECT_TRUE(DashboardStats().Snapshot().empty());
}

TEST(DashboardStats, ConcurrentRecordAndSnapshot) {
  DashboardStats stats(seconds(300), 100000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stats, t] {
      for (int i = 0; i < 2000; ++i) {
        stats.Record(Row(t % 2 ? "a" : "b", i, i + 10, 3));
        if (i % 500 == 0) stats.Snapshot({"a", "b"});
      }
    });
  }
  for (auto& th : threads) th.join();
  Json s = stats.Snapshot();
  EXPECT_EQ(s["a"]["requests"].get<int>() + s["b"]["requests"].get<int>(), 8000);
}

TEST(DashboardStats, CostCacheExpires) {
  DashboardStats stats;
  const auto t0 = Clock::now();
  EXPECT_FALSE(stats.CachedCost("all", t0, seconds(10)).has_value());
  stats.StoreCost("all", Json{{"groups", Json::array()}}, t0);
  EXPECT_TRUE(stats.CachedCost("all", t0 + seconds(10), seconds(10)).has_value());
  EXPECT_FALSE(stats.CachedCost("all", t0 + seconds(11), seconds(10)).has_value());
}

TEST(DashboardStats, CostCacheKeepsScopesApart) {
  DashboardStats stats;
  const auto t0 = Clock::now();
  stats.StoreCost("tenant:a", Json{{"groups", Json::array({1})}}, t0);
  EXPECT_FALSE(stats.CachedCost("tenant:b", t0, seconds(10)).has_value());
  EXPECT_FALSE(stats.CachedCost("all", t0, seconds(10)).has_value());
  ASSERT_TRUE(stats.CachedCost("tenant:a", t0, seconds(10)).has_value());
  EXPECT_EQ((*stats.CachedCost("tenant:a", t0, seconds(10)))["groups"].size(), 1u);
}

// The page runs under "script-src 'self'; style-src 'self'": no inline
// script or style, nothing from another origin.
TEST(DashboardPage, LoadsOnlyItsOwnFiles) {
  const std::string html(DashboardHtml());
  EXPECT_EQ(html.find("<style"), std::string::npos);
  EXPECT_EQ(html.find(" style="), std::string::npos);
  EXPECT_EQ(html.find("http:"), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("//cdn"), std::string::npos);
  std::regex script(R"(<script([^>]*)>)");
  int scripts = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), script);
       it != std::sregex_iterator(); ++it) {
    ++scripts;
    EXPECT_NE((*it)[1].str().find("src=\"/dashboard/"), std::string::npos) << (*it)[0];
    const size_t end = html.find("</script>", static_cast<size_t>(it->position()));
    EXPECT_EQ(end, static_cast<size_t>(it->position() + it->length()));  // empty body
  }
  EXPECT_EQ(scripts, 2);  // chart.js, app.js
  for (const char* id :
       {"chart-rps", "chart-escalation", "chart-queue", "chart-kv", "chart-cost"}) {
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  const std::string js(DashboardScript());
  EXPECT_NE(js.find("/dashboard/data"), std::string::npos);
  EXPECT_NE(js.find("data-points"), std::string::npos);
  EXPECT_EQ(js.find("innerHTML"), std::string::npos);  // names from outside stay text
  EXPECT_FALSE(std::string(DashboardStyle()).empty());
}

}  // namespace
}  // namespace brisk::gateway
