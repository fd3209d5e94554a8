#include "gateway/cost_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "gateway/utc_time.h"

namespace brisk::gateway {
namespace {

constexpr std::string_view kParams = "group_by, from, to, by_day, shadow, tenant";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Expected<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    const int hi = i + 2 < s.size() ? HexValue(s[i + 1]) : -1;
    const int lo = hi >= 0 ? HexValue(s[i + 2]) : -1;
    if (lo < 0) return InvalidArgument("malformed %-escape in the query string near '{}'", s);
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

CostGroup Total(const std::vector<CostGroup>& groups) {
  CostGroup t;
  for (const CostGroup& g : groups) {
    t.requests += g.requests;
    t.tokens += g.tokens;
    t.cost_usd += g.cost_usd;
    t.escalations += g.escalations;
  }
  return t;
}

void PutSums(const CostGroup& g, nlohmann::ordered_json* j) {
  (*j)["requests"] = g.requests;
  (*j)["prompt_tokens"] = g.tokens.prompt;
  (*j)["cached_tokens"] = g.tokens.cached;
  (*j)["completion_tokens"] = g.tokens.output;
  (*j)["cost_usd"] = g.cost_usd;
  (*j)["escalations"] = g.escalations;
}

nlohmann::ordered_json TimeOrNull(int64_t t, bool bounded) {
  return bounded ? nlohmann::ordered_json(FormatRfc3339Ms(t)) : nlohmann::ordered_json(nullptr);
}

}  // namespace

const char* GroupByName(GroupBy g) {
  switch (g) {
    case GroupBy::kFeature: return "feature";
    case GroupBy::kTier: return "tier";
    case GroupBy::kTenant: return "tenant";
    case GroupBy::kRollout: return "rollout";
  }
  return "feature";
}

Expected<GroupBy> ParseGroupBy(std::string_view name) {
  if (name == "feature") return GroupBy::kFeature;
  if (name == "tier") return GroupBy::kTier;
  if (name == "tenant") return GroupBy::kTenant;
  if (name == "rollout") return GroupBy::kRollout;
  return InvalidArgument("group_by '{}': expected feature, tier, tenant or rollout", name);
}

const char* ShadowFilterName(ShadowFilter f) {
  switch (f) {
    case ShadowFilter::kExclude: return "exclude";
    case ShadowFilter::kInclude: return "include";
    case ShadowFilter::kOnly: return "only";
  }
  return "exclude";
}

Expected<ShadowFilter> ParseShadowFilter(std::string_view name) {
  if (name == "exclude") return ShadowFilter::kExclude;
  if (name == "include") return ShadowFilter::kInclude;
  if (name == "only") return ShadowFilter::kOnly;
  return InvalidArgument("shadow '{}': expected exclude, include or only", name);
}

Expected<int64_t> ParseReportTime(std::string_view text, bool is_end) {
  bool date_only = false;
  Expected<int64_t> t = ParseTimeMs(text, &date_only);
  if (!t.ok()) return t;
  if (is_end && date_only) return *t + kMsPerDay;
  return t;
}

Expected<CostQuery> ParseCostQuery(std::string_view query_string) {
  CostQuery q;
  bool seen_group_by = false, seen_from = false, seen_to = false, seen_by_day = false,
       seen_shadow = false, seen_tenant = false;
  size_t pos = 0;
  while (pos <= query_string.size()) {
    size_t amp = query_string.find('&', pos);
    if (amp == std::string_view::npos) amp = query_string.size();
    const std::string_view part = query_string.substr(pos, amp - pos);
    pos = amp + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    ASSIGN_OR_RETURN(const std::string name, PercentDecode(part.substr(0, eq)));
    ASSIGN_OR_RETURN(
        const std::string value,
        PercentDecode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1)));
    auto once = [&](bool* seen) -> Status {
      if (*seen) return InvalidArgument("parameter '{}' given twice", name);
      *seen = true;
      return Status::Ok();
    };
    if (name == "group_by") {
      RETURN_IF_ERROR(once(&seen_group_by));
      ASSIGN_OR_RETURN(q.group_by, ParseGroupBy(value));
    } else if (name == "from" || name == "to") {
      const bool is_end = name == "to";
      RETURN_IF_ERROR(once(is_end ? &seen_to : &seen_from));
      if (value.empty()) continue;  // "from=": no bound
      Expected<int64_t> t = ParseReportTime(value, is_end);
      if (!t.ok()) return t.status().WithContext(name);
      (is_end ? q.to_unix_ms : q.from_unix_ms) = *t;
    } else if (name == "by_day") {
      RETURN_IF_ERROR(once(&seen_by_day));
      if (value == "1" || value == "true") {
        q.by_day = true;
      } else if (value == "0" || value == "false") {
        q.by_day = false;
      } else {
        return InvalidArgument("by_day '{}': expected 1, 0, true or false", value);
      }
    } else if (name == "shadow") {
      RETURN_IF_ERROR(once(&seen_shadow));
      ASSIGN_OR_RETURN(q.shadow, ParseShadowFilter(value));
    } else if (name == "tenant") {
      RETURN_IF_ERROR(once(&seen_tenant));
      q.tenant = value;
    } else {
      return InvalidArgument("unknown parameter '{}' (expected {})", name, kParams);
    }
  }
  if (q.from_unix_ms >= q.to_unix_ms) {
    return InvalidArgument("from ({}) must be before to ({})", FormatRfc3339Ms(q.from_unix_ms),
                           FormatRfc3339Ms(q.to_unix_ms));
  }
  return q;
}

nlohmann::ordered_json CostReportJson(const CostQuery& q, const std::vector<CostGroup>& groups) {
  nlohmann::ordered_json j;
  j["object"] = "cost_report";
  j["group_by"] = GroupByName(q.group_by);
  j["by_day"] = q.by_day;
  j["from"] = TimeOrNull(q.from_unix_ms, q.from_unix_ms > 0);  // 0: from the beginning
  j["to"] = TimeOrNull(q.to_unix_ms, q.to_unix_ms != INT64_MAX);
  j["shadow"] = ShadowFilterName(q.shadow);
  j["tenant"] = q.tenant ? nlohmann::ordered_json(*q.tenant) : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const CostGroup& g : groups) {
    nlohmann::ordered_json row;
    row["key"] = g.key;
    row["day"] = g.day.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(g.day);
    PutSums(g, &row);
    data.push_back(std::move(row));
  }
  j["data"] = std::move(data);
  nlohmann::ordered_json total = nlohmann::ordered_json::object();
  PutSums(Total(groups), &total);
  j["total"] = std::move(total);
  return j;
}

std::string CostReportTable(const CostQuery& q, const std::vector<CostGroup>& groups) {
  const std::string key_name = GroupByName(q.group_by);
  std::vector<std::string> header;
  if (q.by_day) header.push_back("day");
  for (const char* h : {"requests", "prompt_tokens", "cached_tokens", "completion_tokens",
                        "cost_usd", "escalations"}) {
    header.push_back(h);
  }
  header.insert(header.begin() + (q.by_day ? 1 : 0), key_name);
  const size_t text_columns = q.by_day ? 2 : 1;  // left-aligned

  auto cells = [&](const CostGroup& g, bool total) {
    std::vector<std::string> c;
    if (q.by_day) c.push_back(total ? "total" : g.day);
    c.push_back(total ? (q.by_day ? "" : "total") : (g.key.empty() ? "(none)" : g.key));
    c.push_back(fmt::format("{}", g.requests));
    c.push_back(fmt::format("{}", g.tokens.prompt));
    c.push_back(fmt::format("{}", g.tokens.cached));
    c.push_back(fmt::format("{}", g.tokens.output));
    c.push_back(fmt::format("{:.4f}", g.cost_usd));
    c.push_back(fmt::format("{}", g.escalations));
    return c;
  };
  std::vector<std::vector<std::string>> rows;
  rows.push_back(header);
  for (const CostGroup& g : groups) rows.push_back(cells(g, false));
  rows.push_back(cells(Total(groups), true));

  std::vector<size_t> width(header.size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < r.size(); ++i) {
      if (i) s += "  ";
      s += i < text_columns ? fmt::format("{:<{}}", r[i], width[i])
                            : fmt::format("{:>{}}", r[i], width[i]);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };

  const char* shadow = q.shadow == ShadowFilter::kInclude ? ", shadow requests included"
                       : q.shadow == ShadowFilter::kOnly  ? ", shadow requests only"
                                                          : "";
  std::string out = fmt::format(
      "cost by {}{}, {} to {} (UTC){}\n", key_name, q.by_day ? " and day" : "",
      q.from_unix_ms > 0 ? FormatRfc3339Ms(q.from_unix_ms) : std::string("the beginning"),
      q.to_unix_ms != INT64_MAX ? FormatRfc3339Ms(q.to_unix_ms) : std::string("now"), shadow);
  out += line(rows.front());
  if (groups.empty()) out += "(no requests in this range)\n";
  for (size_t i = 1; i + 1 < rows.size(); ++i) out += line(rows[i]);
  out += line(rows.back());
  return out;
}

}  // namespace brisk::gateway
