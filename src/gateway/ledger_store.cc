// The SQL both ledger stores share: one table, one insert, one rollup.
#include "gateway/ledger_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "gateway/utc_time.h"

namespace brisk::gateway {
namespace {

constexpr const char* kDayExpr = "time_unix_ms / 86400000";  // UTC day number (times are >= 0)

const char* KeyColumn(GroupBy g) {
  switch (g) {
    case GroupBy::kFeature: return "feature";
    case GroupBy::kTier: return "tier";
    case GroupBy::kTenant: return "tenant";
    case GroupBy::kRollout: return "rollout";
  }
  return "feature";
}

// " AND <condition>" on the shadow column. `NOT shadow` reads the same on
// SQLite (0/1 integers) and PostgreSQL (a boolean).
std::string ShadowCondition(ShadowFilter f, bool has_column) {
  if (!has_column) return f == ShadowFilter::kOnly ? " AND 1 = 0" : "";
  switch (f) {
    case ShadowFilter::kExclude: return " AND NOT shadow";
    case ShadowFilter::kInclude: return "";
    case ShadowFilter::kOnly: return " AND shadow";
  }
  return " AND NOT shadow";
}

}  // namespace

std::string InsertSql(int rows, char placeholder) {
  std::string sql = "INSERT INTO brisk_ledger (";
  for (int c = 0; c < kLedgerColumnCount; ++c) {
    if (c) sql += ", ";
    sql += kLedgerColumns[c];
  }
  sql += ") VALUES ";
  int n = 1;
  for (int r = 0; r < rows; ++r) {
    sql += r ? ", (" : "(";
    for (int c = 0; c < kLedgerColumnCount; ++c) {
      if (c) sql += ", ";
      sql += placeholder;
      sql += std::to_string(n++);
    }
    sql += ')';
  }
  sql += " ON CONFLICT (request_id) DO NOTHING";
  return sql;
}

std::string RollupSql(const CostQuery& q, char p, bool has_shadow_columns) {
  const char* key =
      q.group_by == GroupBy::kRollout && !has_shadow_columns ? "''" : KeyColumn(q.group_by);
  // CASTs keep the result types the same on both stores (PostgreSQL sums
  // BIGINTs as NUMERIC).
  return fmt::format(
      "SELECT {key}, {day}COUNT(*), CAST(COALESCE(SUM(prompt_tokens), 0) AS BIGINT), "
      "CAST(COALESCE(SUM(cached_tokens), 0) AS BIGINT), "
      "CAST(COALESCE(SUM(completion_tokens), 0) AS BIGINT), "
      "CAST(COALESCE(SUM(cost_usd), 0) AS DOUBLE PRECISION), "
      "CAST(COALESCE(SUM(escalations), 0) AS BIGINT) "
      "FROM brisk_ledger WHERE time_unix_ms >= {p}1 AND time_unix_ms < {p}2{tenant}{shadow} "
      "GROUP BY 1{group_day}",
      fmt::arg("key", key), fmt::arg("day", q.by_day ? fmt::format("{}, ", kDayExpr) : ""),
      fmt::arg("p", p), fmt::arg("tenant", q.tenant ? fmt::format(" AND tenant = {}3", p) : ""),
      fmt::arg("shadow", ShadowCondition(q.shadow, has_shadow_columns)),
      fmt::arg("group_day", q.by_day ? ", 2" : ""));
}

std::string SpendSql(bool by_feature, char p, bool has_shadow_columns) {
  return fmt::format(
      "SELECT CAST(COALESCE(SUM(cost_usd), 0) AS DOUBLE PRECISION) FROM brisk_ledger "
      "WHERE {} = {}1 AND time_unix_ms >= {}2{}",
      by_feature ? "feature" : "api_key_name", p, p,
      ShadowCondition(ShadowFilter::kExclude, has_shadow_columns));
}

std::string DayString(int64_t days_since_epoch) {
  return FormatUtcDate(days_since_epoch * kMsPerDay);
}

void SortGroups(std::vector<CostGroup>* groups) {
  std::sort(groups->begin(), groups->end(), [](const CostGroup& a, const CostGroup& b) {
    return std::tie(a.day, a.key) < std::tie(b.day, b.key);
  });
}

}  // namespace brisk::gateway
