// `brisk cost`: the gateway's cost ledger as a table (per feature per day by
// default) or as the JSON of GET /v1/cost. Reads only: the ledger must exist.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "gateway/cost_report.h"
#include "gateway/ledger.h"

namespace brisk {
namespace {

struct CostFlags {
  std::string ledger = "brisk-ledger.db";
  std::string group_by = "feature";
  std::string from;
  std::string to;
  bool json = false;
  bool totals = false;
  std::string shadow = "exclude";
  std::string tenant;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "brisk cost: %s\n", s.message().c_str());
  return 1;
}

int RunCost(const CostFlags& f) {
  gateway::CostQuery q;
  auto group_by = gateway::ParseGroupBy(f.group_by);
  if (!group_by.ok()) return Fail(group_by.status());
  q.group_by = *group_by;
  q.by_day = !f.totals;
  q.shadow = f.shadow == "only"      ? gateway::ShadowFilter::kOnly
             : f.shadow == "include" ? gateway::ShadowFilter::kInclude
                                     : gateway::ShadowFilter::kExclude;
  if (!f.from.empty()) {
    auto t = gateway::ParseReportTime(f.from, /*is_end=*/false);
    if (!t.ok()) return Fail(t.status().WithContext("--from"));
    q.from_unix_ms = *t;
  }
  if (!f.to.empty()) {
    auto t = gateway::ParseReportTime(f.to, /*is_end=*/true);
    if (!t.ok()) return Fail(t.status().WithContext("--to"));
    q.to_unix_ms = *t;
  }
  if (q.from_unix_ms >= q.to_unix_ms) {
    return Fail(InvalidArgument("--from must be before --to"));
  }
  if (!f.tenant.empty()) q.tenant = f.tenant;
  auto ledger = gateway::OpenLedger(f.ledger, gateway::LedgerMode::kReadOnly);
  if (!ledger.ok()) return Fail(ledger.status());
  auto groups = (*ledger)->Query(q);
  if (!groups.ok()) return Fail(groups.status());
  if (f.json) {
    const std::string text =
        gateway::CostReportJson(q, *groups)
            .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    std::printf("%s\n", text.c_str());
  } else {
    std::fputs(gateway::CostReportTable(q, *groups).c_str(), stdout);
  }
  return 0;
}

}  // namespace

CommandRunner RegisterCost(CLI::App& app) {
  auto f = std::make_shared<CostFlags>();
  app.add_option("--ledger", f->ledger,
                 "the gateway's ledger.url: a SQLite file or postgresql://user@host:port/db")
      ->capture_default_str();
  app.add_option("--group-by", f->group_by, "feature, tier, tenant or rollout")
      ->check(CLI::IsMember({"feature", "tier", "tenant", "rollout"}))
      ->capture_default_str();
  app.add_option("--from", f->from,
                 "from this UTC date (2026-12-01), RFC 3339 time or unix seconds, inclusive");
  app.add_option("--to", f->to, "up to this time, exclusive; a date includes that whole day");
  app.add_flag("--json", f->json, "print the JSON of GET /v1/cost instead of a table");
  app.add_option("--shadow", f->shadow,
                 "rollout shadow rows: exclude (the callers' bill), include or only (what "
                 "shadow traffic cost)")
      ->check(CLI::IsMember({"exclude", "include", "only"}))
      ->capture_default_str();
  app.add_option("--tenant", f->tenant, "only this tenant's rows");
  app.add_flag("--totals", f->totals, "one line per group over the whole range, not per day");
  return [f]() -> int { return RunCost(*f); };
}

}  // namespace brisk
