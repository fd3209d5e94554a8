// Spend limits per API key (by its configured name) and per feature, per UTC
// day and UTC month, in US dollars (gateway.yaml `budgets`), kept in the
// ledger's database so that every gateway on it enforces the same spend.
//
// A request is admitted by Reserve(), with an estimate of its cost, before
// any generation: in one transaction its key's and feature's windows are
// locked, refused (429 `budget_exceeded` with the Status message) when
// spend + the reservations of requests in flight + the estimate would pass a
// limit, and otherwise the estimate is reserved. Settle() replaces the
// reservation by what the request cost. So requests through any number of
// gateways at once never count the same headroom twice: a limit is passed
// only by what admitted requests cost beyond their estimates (the bound).
//
// Each window's spend starts from the ledger's rows (the first reservation
// in a window sums the window's rows so far, shadow rows left out) and
// grows by each Settle(). A reservation a gateway never settles (it was
// killed) expires after reservation_ttl_s.
//
// A request is refused when spend >= limit ("reached"), or when spend +
// reserved + estimate > limit ("would be exceeded").
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/gateway_config.h"
#include "gateway/sql_db.h"
#include "util/status.h"

namespace brisk::gateway {

class Budgets {
 public:
  using Time = std::chrono::system_clock::time_point;

  struct Options {
    double reservation_ttl_s = 600;
  };

  // What Reserve() holds for one request.
  struct Reservation {
    std::string id;  // "" = nothing held (no budget applies, or admitted without the database)
    double estimate_usd = 0;
  };

  // Creates the tables if missing. Entries naming the same key or feature
  // twice keep the strictest limits. `db` holds the ledger's brisk_ledger table.
  static Expected<std::unique_ptr<Budgets>> Open(const std::vector<BudgetConfig>& configs,
                                                 std::unique_ptr<SqlDb> db, Options options);

  // The reservation, or kResourceExhausted naming the first budget the
  // request would exceed: "feature 'summarize' daily budget $5.00 reached:
  // spent $5.01 (resets at 2026-12-02T00:00:00Z)"; kUnavailable when the
  // database cannot be reached (the caller's on_store_outage policy
  // decides). "" key name or feature: not checked. Blocks on the database.
  Expected<Reservation> Reserve(std::string_view key_name, std::string_view feature,
                                double estimate_usd, Time now);

  // Adds a request's cost to the windows of its arrival time (the ledger
  // row's time, so that the spend agrees with the ledger across midnight)
  // and drops its reservation. Once per request; a shadow is not the
  // caller's spend and is never settled. When the database is away the
  // settlement is kept and retried by later calls (at most 100,000 kept).
  void Settle(const Reservation& r, std::string_view key_name, std::string_view feature,
              double cost_usd, Time arrival);

  // For GET /v1/budgets:
  //   {"object":"budgets","data":[{"kind":"key"|"feature","name":...,
  //     "daily":{"limit_usd","spent_usd","reserved_usd","remaining_usd","resets_at"} | null,
  //     "monthly":{...} | null}, ...]}
  // `only_keys` non-null: the budgets of those key names alone, no feature
  // budgets (a feature's spend adds up every tenant's).
  Expected<nlohmann::ordered_json> SnapshotJson(
      Time now, const std::vector<std::string>* only_keys = nullptr);

  bool empty() const { return limits_.empty(); }
  // Settlements waiting for the database.
  size_t pending_settlements();

 private:
  struct Limits {
    double daily_usd = 0;  // 0 = none
    double monthly_usd = 0;
  };
  struct Subject {
    bool is_feature = false;
    std::string name;
  };
  struct Unsettled {
    Reservation r;
    std::string key_name, feature;
    double cost_usd = 0;
    Time arrival;
  };

  Budgets(std::unique_ptr<SqlDb> db, Options options) : db_(std::move(db)), options_(options) {}
  const Limits* Find(bool is_feature, std::string_view name) const;
  Status SettleNow(const Unsettled& u);
  void RetryPending();

  std::unique_ptr<SqlDb> db_;
  const Options options_;
  std::map<std::pair<bool, std::string>, Limits, std::less<>> limits_;  // (is_feature, name)
  std::mutex pending_mu_;
  std::deque<Unsettled> pending_;
  std::atomic<int64_t> next_sweep_ms_{0};
};

}  // namespace brisk::gateway
