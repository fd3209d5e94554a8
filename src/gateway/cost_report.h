// Cost reports from the ledger's rollups: the query of GET /v1/cost (and of
// `brisk cost`), its JSON answer, and the CLI's plain-text table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/ledger.h"
#include "util/status.h"

namespace brisk::gateway {

// "feature" | "tier" | "tenant" | "rollout".
const char* GroupByName(GroupBy g);
Expected<GroupBy> ParseGroupBy(std::string_view name);

// "exclude" | "include" | "only".
const char* ShadowFilterName(ShadowFilter f);
Expected<ShadowFilter> ParseShadowFilter(std::string_view name);

// A report bound as users write it (utc_time.h ParseTimeMs): a date, an RFC
// 3339 time or unix seconds. A bare date as the end (`is_end`) means the end
// of that day, so from=2026-12-01&to=2026-12-01 is that whole day.
Expected<int64_t> ParseReportTime(std::string_view text, bool is_end);

// The URL query string of GET /v1/cost (without the '?'):
//   group_by=feature|tier|tenant|rollout  (default feature)
//   from=<time>                    (inclusive; default: the beginning)
//   to=<time>                      (exclusive; default: no end)
//   by_day=1|0|true|false          (default 0)
//   shadow=exclude|include|only    (default exclude: the callers' bill; shadow
//                                   rows are what rollouts cost the operator)
//   tenant=<name>                  (only that tenant's rows; default: every
//                                   tenant's the caller may read)
// %XX escapes are decoded ('+' stays '+', so "+02:00" offsets survive
// unescaped). An unknown parameter, a repeated one, a bad value or from >= to
// is kInvalidArgument with a message naming the parameter.
Expected<CostQuery> ParseCostQuery(std::string_view query_string);

// {"object":"cost_report","group_by":"feature","by_day":true,
//  "from":"2026-12-01T00:00:00Z" | null, "to":... | null, "shadow":"exclude",
//  "tenant":"acme" | null,
//  "data":[{"key":...,"day":"2026-12-01" | null,"requests":...,"prompt_tokens":...,
//           "cached_tokens":...,"completion_tokens":...,"cost_usd":...,"escalations":...}],
//  "total":{"requests":...,"prompt_tokens":...,...}}
// `groups` as Ledger::Query returns them.
nlohmann::ordered_json CostReportJson(const CostQuery& q, const std::vector<CostGroup>& groups);

// The same as a table for a terminal, one line per group (per day and key
// when grouped by day), then a total line; "(none)" for rows without the key.
std::string CostReportTable(const CostQuery& q, const std::vector<CostGroup>& groups);

}  // namespace brisk::gateway
