// The gateway's dashboard: GET /dashboard (one static HTML page, its script
// /dashboard/app.js and style sheet /dashboard/app.css), its chart library
// (/dashboard/chart.js: Debian's libjs-chart.js, read from
// /usr/share/javascript/chart.js at the first request) and the numbers it
// polls every 2 s (/dashboard/data, JSON): per tier TTFT and TPOT
// p50/p95/p99 over a recent window, requests/s, escalation rate, outcomes,
// per replica queue depth and KV fill, and cost per feature per day from the
// ledger. Everything is served by the gateway itself (no CDN); the page runs
// under a Content-Security-Policy that allows only its own scripts and
// styles and forbids framing.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gateway/ledger.h"
#include "http/server.h"

namespace brisk::gateway {

struct GatewayCore;

// Nearest-rank quantile of ascending `sorted`: the value at rank
// ceil(p x n) (1-based), clamped to [1, n]. nullopt when empty.
std::optional<double> NearestRank(const std::vector<double>& sorted, double p);

// Recent finished requests per tier, for exact quantiles (not histogram
// buckets) over the last `window` of time, at most `max_samples` per tier
// (the oldest go first).
//
// What each request contributes (from its ledger row):
//  - TTFT: ttft_ms, when >= 0 (a token reached the client). For a request
//    not streamed to the client that is the time to its whole answer, which
//    is what its client waited for the first token.
//  - TPOT: (total_ms - ttft_ms) / (output tokens - 1), for streamed requests
//    with ttft_ms >= 0 and more than one output token. A non-streamed answer
//    arrives at once, so its tokens have no observable spacing.
//  - end to end: total_ms of completed requests (errors and cancellations
//    would mix fast failures into the latency).
//  - requests, outcome counts, escalations: every row.
class DashboardStats {
 public:
  using Clock = std::chrono::steady_clock;

  explicit DashboardStats(std::chrono::seconds window = std::chrono::seconds(300),
                          size_t max_samples = 4096, Clock::time_point start = Clock::now())
      : window_(window), max_samples_(max_samples), start_(start) {}

  // Thread-safe; called once per finished request.
  void Record(const LedgerRow& row) { Record(row, Clock::now()); }
  void Record(const LedgerRow& row, Clock::time_point now);

  // Thread-safe. {tier: {"requests", "requests_per_s", "escalated", "escalations",
  //   "escalation_rate", "outcomes": {outcome: count},
  //   "ttft_ms": {"count", "p50", "p95", "p99"}, "tpot_ms": {...}, "e2e_ms": {...}}}
  // over the requests still in the window. Quantiles are null without samples;
  // escalation_rate (requests escalated at least once / requests) is null
  // without requests. requests_per_s divides by the time covered: the window,
  // or less while the stats are younger than it, or from the oldest sample
  // kept when max_samples cut the window short (at least 1 s). Every name in
  // `tiers` appears, with zero requests if it has none.
  nlohmann::json Snapshot(const std::vector<std::string>& tiers = {}) {
    return Snapshot(tiers, Clock::now());
  }
  nlohmann::json Snapshot(const std::vector<std::string>& tiers, Clock::time_point now);

  std::chrono::seconds window() const { return window_; }

  // The ledger's cost per feature per day changes slowly and its query reads
  // the table: /dashboard/data reuses an answer younger than `max_age`, one per
  // scope (DataScope::Describe: "all", "tenant:acme"; at most kMaxCostScopes kept).
  std::optional<nlohmann::json> CachedCost(const std::string& scope, Clock::time_point now,
                                           Clock::duration max_age);
  void StoreCost(const std::string& scope, nlohmann::json cost, Clock::time_point now);
  static constexpr size_t kMaxCostScopes = 256;

 private:
  struct Sample {
    Clock::time_point at;
    double ttft_ms;  // -1: none
    double tpot_ms;  // -1: none
    double e2e_ms;   // -1: not completed
    int escalations;
    std::string outcome;
  };
  void Trim(std::deque<Sample>& q, Clock::time_point now);

  std::mutex mu_;
  std::map<std::string, std::deque<Sample>> tiers_;  // guarded by mu_
  std::chrono::seconds window_;
  size_t max_samples_;
  Clock::time_point start_;

  struct CachedAnswer {
    nlohmann::json cost;
    Clock::time_point at;
  };
  std::mutex cost_mu_;
  std::map<std::string, CachedAnswer> cost_;  // by scope; guarded by cost_mu_
};

// The paths ServeDashboard answers (GET). Like /metrics they take no API key:
// a browser cannot attach one to a page load. The page's script sends the key
// the user types to /dashboard/data, whose cost part is the key's DataScope
// (data_scope.h); without a key it has no cost data (a wrong key is a 401).
inline constexpr const char* kDashboardPaths[] = {
    "/dashboard",          "/dashboard/app.js", "/dashboard/app.css",
    "/dashboard/chart.js", "/dashboard/data",
};

// Answers the paths above (anything else under them: 404). Runs on an HTTP
// I/O thread; the ledger query of /dashboard/data runs on core.upstream_io.
void ServeDashboard(GatewayCore& core, const http::Request& req,
                    std::shared_ptr<http::Responder> res);

}  // namespace brisk::gateway
