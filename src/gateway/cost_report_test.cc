#include "gateway/cost_report.h"

#include <gtest/gtest.h>

#include <climits>

namespace brisk::gateway {
namespace {

constexpr int64_t kDec1Ms = 1'796'083'200'000;  // 2026-12-01T00:00:00Z
constexpr int64_t kDayMs = 86'400'000;

TEST(CostQueryTest, Defaults) {
  auto q = ParseCostQuery("");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->group_by, GroupBy::kFeature);
  EXPECT_EQ(q->from_unix_ms, 0);
  EXPECT_EQ(q->to_unix_ms, INT64_MAX);
  EXPECT_FALSE(q->by_day);
  EXPECT_EQ(q->shadow, ShadowFilter::kExclude);  // the callers' bill
}

TEST(CostQueryTest, ShadowAndRollout) {
  for (auto [text, want] : {std::pair{"exclude", ShadowFilter::kExclude},
                            {"include", ShadowFilter::kInclude},
                            {"only", ShadowFilter::kOnly}}) {
    auto q = ParseCostQuery(std::string("group_by=rollout&shadow=") + text);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_EQ(q->shadow, want);
    EXPECT_EQ(q->group_by, GroupBy::kRollout);
    EXPECT_STREQ(ShadowFilterName(want), text);
  }
}

TEST(CostQueryTest, ParsesEveryParameter) {
  auto q = ParseCostQuery("group_by=tier&from=2026-12-01&to=2026-12-03&by_day=1");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->group_by, GroupBy::kTier);
  EXPECT_EQ(q->from_unix_ms, kDec1Ms);
  EXPECT_EQ(q->to_unix_ms, kDec1Ms + 3 * kDayMs);  // a date as `to` includes that day
  EXPECT_TRUE(q->by_day);

  q = ParseCostQuery("from=2026-12-01&to=2026-12-01&group_by=tenant&by_day=false");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->group_by, GroupBy::kTenant);
  EXPECT_EQ(q->to_unix_ms - q->from_unix_ms, kDayMs);  // that one whole day
  EXPECT_FALSE(q->by_day);

  // Times are exact bounds; %-escapes decoded; '+' kept as the offset sign.
  q = ParseCostQuery("from=2026-12-01T10%3A00%3A00Z&to=2026-12-01T12:00:00+01:00");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->from_unix_ms, kDec1Ms + 10 * 3'600'000);
  EXPECT_EQ(q->to_unix_ms, kDec1Ms + 11 * 3'600'000);

  q = ParseCostQuery("from=1796083200&to=1796086800&&by_day=true");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->from_unix_ms, kDec1Ms);
  EXPECT_EQ(q->to_unix_ms, kDec1Ms + 3'600'000);

  q = ParseCostQuery("from=&to=");  // empty: unbounded
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->to_unix_ms, INT64_MAX);
  EXPECT_FALSE(q->tenant.has_value());

  q = ParseCostQuery("tenant=acme%20corp");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->tenant, "acme corp");
  EXPECT_FALSE(ParseCostQuery("tenant=a&tenant=b").ok());
}

TEST(CostQueryTest, BadInputIsAClearInvalidArgument) {
  const std::pair<const char*, const char*> cases[] = {
      {"group_by=model", "group_by 'model': expected feature, tier, tenant or rollout"},
      {"group_by=", "group_by '': expected feature, tier, tenant or rollout"},
      {"from=yesterday",
       "from: 'yesterday' is not a time: use a UTC date (2026-12-01), an RFC 3339 time "
       "(2026-12-01T10:00:00Z) or unix seconds"},
      {"to=2026-02-30", "to: '2026-02-30' is not a valid date"},
      {"by_day=yes", "by_day 'yes': expected 1, 0, true or false"},
      {"limit=10",
       "unknown parameter 'limit' (expected group_by, from, to, by_day, shadow, tenant)"},
      {"shadow=yes", "shadow 'yes': expected exclude, include or only"},
      {"shadow=", "shadow '': expected exclude, include or only"},
      {"shadow=only&shadow=include", "parameter 'shadow' given twice"},
      {"group_by=tier&group_by=feature", "parameter 'group_by' given twice"},
      {"from=2026-12-03&to=2026-12-01",
       "from (2026-12-03T00:00:00Z) must be before to (2026-12-02T00:00:00Z)"},
      {"from=%zz", "malformed %-escape in the query string near '%zz'"},
  };
  for (const auto& [query, message] : cases) {
    auto q = ParseCostQuery(query);
    ASSERT_FALSE(q.ok()) << query;
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument) << query;
    EXPECT_EQ(q.status().message(), message) << query;
  }
}

std::vector<CostGroup> SampleGroups() {
  CostGroup a;
  a.key = "summarize";
  a.day = "2026-12-01";
  a.requests = 120;
  a.tokens = {45000, 12000, 9000};
  a.cost_usd = 0.0525;
  a.escalations = 3;
  CostGroup b;
  b.key = "";
  b.day = "2026-12-02";
  b.requests = 2;
  b.tokens = {300, 0, 40};
  b.cost_usd = 0.00009;
  CostGroup c = a;
  c.day = "2026-12-02";
  c.requests = 80;
  c.tokens = {30000, 10000, 5000};
  c.cost_usd = 1.25;
  c.escalations = 0;
  return {a, b, c};
}

TEST(CostReportTest, JsonShape) {
  CostQuery q;
  q.by_day = true;
  q.from_unix_ms = kDec1Ms;
  const nlohmann::ordered_json j = CostReportJson(q, SampleGroups());
  EXPECT_EQ(j["object"], "cost_report");
  EXPECT_EQ(j["group_by"], "feature");
  EXPECT_EQ(j["by_day"], true);
  EXPECT_EQ(j["from"], "2026-12-01T00:00:00Z");
  EXPECT_TRUE(j["to"].is_null());
  EXPECT_EQ(j["shadow"], "exclude");
  ASSERT_EQ(j["data"].size(), 3u);
  EXPECT_EQ(j["data"][0].dump(),
            R"({"key":"summarize","day":"2026-12-01","requests":120,"prompt_tokens":45000,)"
            R"("cached_tokens":12000,"completion_tokens":9000,"cost_usd":0.0525,"escalations":3})");
  EXPECT_EQ(j["data"][1]["key"], "");
  EXPECT_EQ(j["total"].dump(), R"({"requests":202,"prompt_tokens":75300,"cached_tokens":22000,)"
                               R"("completion_tokens":14040,"cost_usd":1.30259,"escalations":3})");

  CostQuery by_tier;
  by_tier.group_by = GroupBy::kTier;
  by_tier.to_unix_ms = kDec1Ms + 1500;
  const nlohmann::ordered_json t = CostReportJson(by_tier, {});
  EXPECT_EQ(t.dump(),
            R"({"object":"cost_report","group_by":"tier","by_day":false,"from":null,)"
            R"("to":"2026-12-01T00:00:01.500Z","shadow":"exclude","tenant":null,"data":[],)"
            R"("total":{"requests":0,)"
            R"("prompt_tokens":0,"cached_tokens":0,"completion_tokens":0,"cost_usd":0.0,)"
            R"("escalations":0}})");
  // A group without a day (not by day) has "day": null.
  CostGroup g;
  g.key = "small";
  EXPECT_TRUE(CostReportJson(by_tier, {g})["data"][0]["day"].is_null());
}

TEST(CostReportTest, TablePerFeaturePerDay) {
  CostQuery q;
  q.by_day = true;
  q.from_unix_ms = kDec1Ms;
  q.to_unix_ms = kDec1Ms + 2 * kDayMs;
  EXPECT_EQ(CostReportTable(q, SampleGroups()),
            "cost by feature and day, 2026-12-01T00:00:00Z to 2026-12-03T00:00:00Z (UTC)\n"
            "day         feature    requests  prompt_tokens  cached_tokens  completion_tokens  "
            "cost_usd  escalations\n"
            "2026-12-01  summarize       120          45000          12000               9000    "
            "0.0525            3\n"
            "2026-12-02  (none)            2            300              0                 40    "
            "0.0001            0\n"
            "2026-12-02  summarize        80          30000          10000               5000    "
            "1.2500            0\n"
            "total                       202          75300          22000              14040    "
            "1.3026            3\n");
}

TEST(CostReportTest, TableWithoutDaysAndEmpty) {
  CostQuery q;
  q.group_by = GroupBy::kTier;
  CostGroup g;
  g.key = "small";
  g.requests = 5;
  g.cost_usd = 0.5;
  EXPECT_EQ(
      CostReportTable(q, {g}),
      "cost by tier, the beginning to now (UTC)\n"
      "tier   requests  prompt_tokens  cached_tokens  completion_tokens  cost_usd  "
      "escalations\n"
      "small         5              0              0                  0    0.5000            0\n"
      "total         5              0              0                  0    0.5000            0\n");
  const std::string empty = CostReportTable(q, {});
  EXPECT_NE(empty.find("(no requests in this range)\n"), std::string::npos) << empty;
  // The title says when shadow requests are in the sums.
  q.shadow = ShadowFilter::kOnly;
  EXPECT_EQ(CostReportTable(q, {}).substr(0, 63),
            "cost by tier, the beginning to now (UTC), shadow requests only\n");
  q.shadow = ShadowFilter::kInclude;
  EXPECT_NE(CostReportTable(q, {}).find("(UTC), shadow requests included\n"), std::string::npos);
}

TEST(CostReportTest, GroupByNames) {
  for (GroupBy g : {GroupBy::kFeature, GroupBy::kTier, GroupBy::kTenant, GroupBy::kRollout}) {
    auto back = ParseGroupBy(GroupByName(g));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, g);
  }
  EXPECT_EQ(*ParseReportTime("2026-12-01", true), kDec1Ms + kDayMs);
  EXPECT_EQ(*ParseReportTime("2026-12-01", false), kDec1Ms);
  EXPECT_EQ(*ParseReportTime("2026-12-01T00:00:00Z", true), kDec1Ms);
}

}  // namespace
}  // namespace brisk::gateway
