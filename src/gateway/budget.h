// Spend limits per API key (by its configured name) and per feature, per UTC
// day and UTC month, in US dollars (gateway.yaml `budgets`).
//
// The gateway asks Check() before any generation, with an estimate of the
// request's cost, and answers 429 `budget_exceeded` with the Status message
// when it fails; Record() adds what a request finally cost. Spend starts from
// the ledger (Load) so a restart keeps today's and this month's spend, and
// rolls over at UTC midnight and at the first of the month.
//
// A limit is reached when spend >= limit, and a request is refused when
// spend + estimate > limit. Requests checked at the same time are not
// reserved against each other: concurrent requests may overshoot a limit by
// what they cost together.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/gateway_config.h"
#include "gateway/ledger.h"
#include "util/status.h"

namespace brisk::gateway {

class Budgets {
 public:
  using Time = std::chrono::system_clock::time_point;

  // Entries naming the same key or feature twice keep the strictest limits.
  explicit Budgets(const std::vector<BudgetConfig>& configs);

  // Today's and this month's spend of every budgeted key and feature, from
  // the ledger's rows (SpendSince the UTC day's and month's starts; shadow
  // rows are never counted).
  Status Load(Ledger& ledger, Time now);

  // Ok, or kResourceExhausted naming the first budget the request would
  // exceed: "feature 'summarize' daily budget $5.00 reached: spent $5.01
  // (resets at 2026-12-02T00:00:00Z)". "" key name or feature: not checked.
  Status Check(std::string_view key_name, std::string_view feature, double estimate_usd, Time now);

  // Adds a request's cost to its key's and feature's spend. `time` is when
  // the request arrived (the ledger row's time), so that the spend agrees
  // with the ledger across midnight.
  void Record(std::string_view key_name, std::string_view feature, double cost_usd, Time time);
  // The same from a ledger row (its key name, feature, cost and arrival
  // time). A shadow row is not the caller's spend and is never recorded.
  void Record(const LedgerRow& row);

  // For GET /v1/budgets:
  //   {"object":"budgets","data":[{"kind":"key"|"feature","name":...,
  //     "daily":{"limit_usd","spent_usd","remaining_usd","resets_at"} | null,
  //     "monthly":{...} | null}, ...]}
  // `only_keys` non-null: the budgets of those key names alone, no feature budgets
  // (a feature's spend adds up every tenant's).
  nlohmann::ordered_json SnapshotJson(Time now,
                                      const std::vector<std::string>* only_keys = nullptr);

  bool empty() const { return keys_.empty() && features_.empty(); }

 private:
  struct Window {
    double limit_usd = 0;  // 0 = none
    int64_t start_ms = 0;
    int64_t end_ms = 0;  // the window is [start, end); before the first roll both are 0
    double spent_usd = 0;
  };
  struct Subject {
    Window day, month;
  };
  using Subjects = std::map<std::string, Subject, std::less<>>;

  static void Roll(Subject* s, int64_t now_ms);
  static Subject* Find(Subjects& subjects, std::string_view name);

  std::mutex mu_;
  Subjects keys_;      // by API key name
  Subjects features_;  // by feature
};

}  // namespace brisk::gateway
