#include "gateway/dashboard.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

#include "gateway/dashboard_page.h"
#include "gateway/data_scope.h"
#include "gateway/gateway_core.h"
#include "gateway/rollout_manager.h"
#include "http/caller_identity.h"
#include "http/openai_error.h"
#include "util/log.h"

namespace brisk::gateway {

using Json = nlohmann::json;

std::optional<double> NearestRank(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::nullopt;
  const double n = static_cast<double>(sorted.size());
  const auto rank = static_cast<size_t>(std::clamp(std::ceil(p * n), 1.0, n));
  return sorted[rank - 1];
}

// --- DashboardStats. ---

void DashboardStats::Trim(std::deque<Sample>& q, Clock::time_point now) {
  const Clock::time_point oldest = now - window_;
  while (!q.empty() && (q.size() > max_samples_ || q.front().at < oldest)) q.pop_front();
}

void DashboardStats::Record(const LedgerRow& row, Clock::time_point now) {
  // A shadow copy is no caller's request: counting it would double a tier's
  // request rate (the baseline answered the caller).
  if (row.shadow) return;
  Sample s;
  s.at = now;
  s.ttft_ms = row.ttft_ms >= 0 ? row.ttft_ms : -1;
  s.tpot_ms = -1;
  if (row.stream && row.ttft_ms >= 0 && row.tokens.output > 1 && row.total_ms >= row.ttft_ms) {
    s.tpot_ms = (row.total_ms - row.ttft_ms) / static_cast<double>(row.tokens.output - 1);
  }
  s.e2e_ms = row.outcome == "completed" ? row.total_ms : -1;
  s.escalations = row.escalations;
  s.outcome = row.outcome.empty() ? "unknown" : row.outcome;
  std::lock_guard lock(mu_);
  std::deque<Sample>& q = tiers_[row.tier];
  q.push_back(std::move(s));
  Trim(q, now);
}

namespace {

// The numbers of one tier's window, copied out of the lock.
struct TierWindow {
  std::vector<double> ttft, tpot, e2e;
  std::map<std::string, int64_t> outcomes;
  int64_t requests = 0;
  int64_t escalated = 0;    // requests escalated at least once
  int64_t escalations = 0;  // cascade steps, summed
  double span_s = 1;        // time the window covers
};

Json Quantiles(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  auto q = [&v](double p) -> Json {
    auto x = NearestRank(v, p);
    return x ? Json(*x) : Json(nullptr);
  };
  return {{"count", v.size()}, {"p50", q(0.50)}, {"p95", q(0.95)}, {"p99", q(0.99)}};
}

Json TierJson(TierWindow& w) {
  Json j;
  j["requests"] = w.requests;
  j["requests_per_s"] = static_cast<double>(w.requests) / w.span_s;
  j["escalated"] = w.escalated;
  j["escalations"] = w.escalations;
  j["escalation_rate"] =
      w.requests > 0 ? Json(static_cast<double>(w.escalated) / static_cast<double>(w.requests))
                     : Json(nullptr);
  j["outcomes"] = w.outcomes;  // an object, possibly empty
  if (w.outcomes.empty()) j["outcomes"] = Json::object();
  j["ttft_ms"] = Quantiles(w.ttft);
  j["tpot_ms"] = Quantiles(w.tpot);
  j["e2e_ms"] = Quantiles(w.e2e);
  return j;
}

}  // namespace

Json DashboardStats::Snapshot(const std::vector<std::string>& tiers, Clock::time_point now) {
  std::map<std::string, TierWindow> windows;
  for (const std::string& t : tiers) windows[t];
  {
    std::lock_guard lock(mu_);
    const double age_s = std::chrono::duration<double>(now - start_).count();
    for (auto& [name, q] : tiers_) {
      Trim(q, now);
      TierWindow& w = windows[name];
      for (const Sample& s : q) {
        ++w.requests;
        ++w.outcomes[s.outcome];
        if (s.escalations > 0) ++w.escalated;
        w.escalations += s.escalations;
        if (s.ttft_ms >= 0) w.ttft.push_back(s.ttft_ms);
        if (s.tpot_ms >= 0) w.tpot.push_back(s.tpot_ms);
        if (s.e2e_ms >= 0) w.e2e.push_back(s.e2e_ms);
      }
      double span = std::min(static_cast<double>(window_.count()), age_s);
      if (q.size() >= max_samples_ && !q.empty()) {
        // The count bound dropped requests that were still in the window.
        span = std::min(span, std::chrono::duration<double>(now - q.front().at).count());
      }
      w.span_s = std::max(span, 1.0);
    }
  }
  Json out = Json::object();
  for (auto& [name, w] : windows) out[name] = TierJson(w);
  return out;
}

std::optional<Json> DashboardStats::CachedCost(const std::string& scope, Clock::time_point now,
                                               Clock::duration max_age) {
  std::lock_guard lock(cost_mu_);
  auto it = cost_.find(scope);
  if (it == cost_.end() || now - it->second.at > max_age) return std::nullopt;
  return it->second.cost;
}

void DashboardStats::StoreCost(const std::string& scope, Json cost, Clock::time_point now) {
  std::lock_guard lock(cost_mu_);
  if (cost_.size() >= kMaxCostScopes && !cost_.count(scope)) cost_.clear();
  cost_[scope] = {std::move(cost), now};
}

// --- HTTP. ---

namespace {

constexpr const char* kChartJsDir = "/usr/share/javascript/chart.js";
constexpr auto kCostMaxAge = std::chrono::seconds(10);
constexpr int64_t kCostDays = 30;
constexpr int64_t kDayMs = 86'400'000;

// The page's policy: its own scripts, styles and fetches only; no plugins,
// no forms, no framing (frame-ancestors; X-Frame-Options for old browsers).
constexpr const char* kPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

http::Headers Headers(const char* content_type, const char* cache_control) {
  return {{"Content-Type", content_type},        {"Cache-Control", cache_control},
          {"X-Content-Type-Options", "nosniff"}, {"X-Frame-Options", "DENY"},
          {"Content-Security-Policy", kPolicy},  {"Referrer-Policy", "no-referrer"}};
}

void SendText(http::Responder& res, int status, std::string body) {
  res.Send(status, Headers("text/plain; charset=utf-8", "no-store"), std::move(body));
}

// Debian's libjs-chart.js (the UMD build, which defines window.Chart), read
// once and kept; a missing file is looked for again at the next request, so
// installing the package does not need a restart.
std::shared_ptr<const std::string> ChartJs() {
  static std::mutex mu;
  static std::shared_ptr<const std::string> cached;
  std::lock_guard lock(mu);
  if (cached) return cached;
  for (const char* name : {"chart.min.js", "chart.js"}) {
    std::ifstream in(std::string(kChartJsDir) + "/" + name, std::ios::binary);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) continue;
    cached = std::make_shared<const std::string>(std::move(text).str());
    return cached;
  }
  return nullptr;
}

Json ReplicasJson(GatewayCore& core) {
  Json out = Json::array();
  for (auto& tier : core.tiers) {
    std::lock_guard lock(tier->mu);
    for (const ReplicaState& r : tier->picker.replicas()) {
      out.push_back({{"tier", tier->config->name},
                     {"upstream", r.name},
                     {"healthy", !r.ejected},
                     {"outstanding", r.outstanding},
                     {"load_known", r.load.known},
                     {"queue_depth", r.load.waiting},
                     {"running", r.load.running},
                     {"kv_fill", r.load.known ? Json(r.load.kv_fill) : Json(nullptr)}});
    }
  }
  return out;
}

// The rollouts as the page shows them: stage, split, each arm's window and the
// candidate's limits; not the spec's upstreams (the admin API has those).
Json DashboardRollouts(const Json& status) {
  Json out = Json::array();
  for (const Json& r : status) {
    Json e = Json::object();
    for (const char* k :
         {"id", "tier", "stage", "step", "started_by", "candidate_share", "shadow_share",
          "seconds_in_stage", "baseline", "candidate", "limits", "min_samples", "judge"}) {
      if (r.contains(k)) e[k] = r[k];
    }
    out.push_back(std::move(e));
  }
  return out;
}

// The last kCostDays UTC days, today included: {"groups": [...]} or {"error": ...}.
Json CostByFeatureDay(Ledger& ledger, const DataScope& scope, int64_t now_unix_ms) {
  CostQuery q;
  if (!scope.all) q.tenant = scope.tenant;
  q.group_by = GroupBy::kFeature;
  q.from_unix_ms = (now_unix_ms / kDayMs - (kCostDays - 1)) * kDayMs;
  q.by_day = true;
  auto groups = ledger.Query(q);
  if (!groups.ok()) return {{"error", groups.status().message()}};
  Json rows = Json::array();
  for (const CostGroup& g : *groups) {
    rows.push_back({{"feature", g.key},
                    {"day", g.day},
                    {"requests", g.requests},
                    {"cost_usd", g.cost_usd},
                    {"prompt_tokens", g.tokens.prompt},
                    {"cached_tokens", g.tokens.cached},
                    {"completion_tokens", g.tokens.output},
                    {"escalations", g.escalations}});
  }
  return {{"groups", rows}};
}

// `scope` nullopt: a caller without a key, who gets no cost data.
void ServeData(GatewayCore& core, std::optional<DataScope> scope,
               std::shared_ptr<http::Responder> res) {
  // The ledger query may read a large table: off the HTTP I/O thread. The
  // core outlives its upstream threads (its destructor joins them first).
  boost::asio::post(core.upstream_io, [&core, scope = std::move(scope), res = std::move(res)] {
    const auto now = DashboardStats::Clock::now();
    const auto wall = std::chrono::system_clock::now();
    const int64_t wall_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
    std::vector<std::string> names;
    for (const TierConfig& t : core.config.tiers) names.push_back(t.name);

    DashboardStats empty;
    DashboardStats& stats = core.dashboard ? *core.dashboard : empty;
    Json data;
    data["generated_at"] = static_cast<double>(wall_ms) / 1000;
    data["window_s"] = stats.window().count();
    data["tiers"] = stats.Snapshot(names, now);
    data["replicas"] = ReplicasJson(core);
    // The fleet, from the shared database: every gateway on it, the running
    // rollouts (the same on every gateway) and the decisions so far.
    data["fleet"] = core.fleet_view.Snapshot();
    data["rollouts"] =
        core.rollouts ? DashboardRollouts(core.rollouts->StatusJson()["data"]) : Json::array();
    data["cost_scope"] = scope ? Json(scope->Describe()) : Json(nullptr);
    if (!scope) {
      data["cost_by_feature_day"] = Json::array();
      data["cost_error"] =
          "cost data needs an API key: a tenant's key shows its own, an admin key all";
      return res->Send(200, Headers("application/json", "no-store"),
                       data.dump(-1, ' ', false, Json::error_handler_t::replace));
    }
    const std::string scope_name = scope->Describe();
    std::optional<Json> cost;
    if (core.dashboard) cost = core.dashboard->CachedCost(scope_name, now, kCostMaxAge);
    if (!cost) {
      cost = CostByFeatureDay(*core.ledger, *scope, wall_ms);
      if (core.dashboard && !cost->contains("error")) {
        core.dashboard->StoreCost(scope_name, *cost, now);
      }
    }
    if (cost->contains("error")) {
      log::Warn("dashboard: cost query failed: {}", (*cost)["error"].get<std::string>());
      data["cost_by_feature_day"] = Json::array();
      data["cost_error"] = (*cost)["error"];
    } else {
      data["cost_by_feature_day"] = (*cost)["groups"];
    }
    res->Send(200, Headers("application/json", "no-store"),
              data.dump(-1, ' ', false, Json::error_handler_t::replace));
  });
}

}  // namespace

void ServeDashboard(GatewayCore& core, const http::Request& req,
                    std::shared_ptr<http::Responder> res) {
  const std::string& p = req.path;
  if (req.method != "GET") {
    http::Headers h = Headers("text/plain; charset=utf-8", "no-store");
    h.push_back({"Allow", "GET"});
    return res->Send(405, std::move(h), "method not allowed: use GET\n");
  }
  if (p == "/dashboard") {
    return res->Send(200, Headers("text/html; charset=utf-8", "no-store"),
                     std::string(DashboardHtml()));
  }
  if (p == "/dashboard/app.js") {
    return res->Send(200, Headers("application/javascript; charset=utf-8", "no-cache"),
                     std::string(DashboardScript()));
  }
  if (p == "/dashboard/app.css") {
    return res->Send(200, Headers("text/css; charset=utf-8", "no-cache"),
                     std::string(DashboardStyle()));
  }
  if (p == "/dashboard/chart.js") {
    auto js = ChartJs();
    if (!js) {
      return SendText(*res, 404,
                      fmt::format("Chart.js not found in {}: install Debian's libjs-chart.js "
                                  "(apt-get install libjs-chart.js); the dashboard's charts "
                                  "need it\n",
                                  kChartJsDir));
    }
    return res->Send(200, Headers("application/javascript; charset=utf-8", "public, max-age=3600"),
                     std::string(*js));
  }
  if (p == "/dashboard/data") {
    const std::string_view auth = req.Header("Authorization");
    std::optional<DataScope> scope;
    if (!auth.empty() || core.config.keys.empty()) {
      scope = ResolveDataScope(core.config, auth);
      if (!scope) return http::SendOpenAiError(*res, UnauthorizedError(auth));
    }
    return ServeData(core, std::move(scope), std::move(res));
  }
  SendText(*res, 404, "no such dashboard file\n");
}

}  // namespace brisk::gateway
