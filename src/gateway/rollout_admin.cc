// The rollout admin API (rollout_manager.h): start, status, promote, abort,
// the audit log.
#include <fmt/format.h>

#include "gateway/gateway_core.h"
#include "gateway/gateway_routes.h"
#include "gateway/json_fields.h"
#include "gateway/rollout_manager.h"
#include "gateway/rollout_tier_slot.h"
#include "http/caller_identity.h"
#include "http/openai_error.h"
#include "util/constant_time.h"
#include "util/log.h"

namespace brisk::gateway {

using Json = nlohmann::json;

void RolloutManager::HandleAdmin(http::Request&& req, std::shared_ptr<http::Responder> res) {
  const std::string& admin = core_->config.rollout.admin_key;
  if (admin.empty()) {
    return http::SendOpenAiError(*res, 404, "invalid_request_error",
                                 "the admin API is off: set rollout.admin_key in gateway.yaml",
                                 "admin_disabled");
  }
  auto token = BearerToken(req.Header("Authorization"));
  // admin is not empty (above), so an empty token cannot match it.
  if (!token || !ConstantTimeEquals(*token, admin)) {
    return http::SendOpenAiError(*res, 401, "invalid_request_error",
                                 "the admin API needs the admin key", "invalid_admin_key");
  }
  // Who: the admin key, and the person the CLI names (X-Brisk-Operator).
  std::string who = "admin";
  if (std::string_view op = req.Header("X-Brisk-Operator"); !op.empty() && op.size() <= 64) {
    who += ":" + std::string(op);
  }
  const std::string& p = req.path;
  if (req.method == "GET" && p == "/admin/rollouts") {
    std::lock_guard lock(mu_);
    return SendJson(*res, 200, StatusJson());
  }
  if (req.method == "GET" && p == "/admin/audit") {
    // Every gateway's decisions, from the database.
    return boost::asio::post(core_->db_io, [this, res] {
      auto entries = store_->Audit(kAuditKept);
      if (!entries.ok()) {
        return http::SendOpenAiError(
            *res, 503, "server_error",
            "the audit log cannot be read now: " + entries.status().message(), "store_unavailable");
      }
      Json data = Json::array();
      for (Json& e : *entries) data.push_back(std::move(e));
      SendJson(*res, 200, {{"object", "list"}, {"data", data}});
    });
  }
  Json body = Json::parse(req.body, nullptr, false);
  if (!body.is_object()) {
    return http::SendOpenAiError(*res, 400, "invalid_request_error",
                                 "the request body is not a JSON object", "invalid_json");
  }
  if (p == "/admin/rollouts") return Start(body, who, res);
  if (p == "/admin/rollouts/promote" || p == "/admin/rollouts/abort") {
    const bool promote = p == "/admin/rollouts/promote";
    return boost::asio::post(core_->db_io, [this, body = std::move(body), promote, who, res] {
      Operator(body, promote, who, *res);
    });
  }
  http::SendOpenAiError(*res, 404, "invalid_request_error", "no such admin route", "not_found");
}

// The gate: the candidate's report must say the gate passed, and every
// candidate upstream must serve exactly what it was measured on (its
// serving key: the model file's bytes, precision, KV precision, engine
// version; an OpenAI-compatible upstream: the model id).
static std::string GateRefusal(const Json& report, const UpstreamConfig& up, const Json& models) {
  if (!report.value("gate_passed", false)) {
    return "the gate report does not say gate_passed: true (a failing or incomplete eval)";
  }
  if (!models.is_object() || !models.contains("data") || !models["data"].is_array() ||
      models["data"].empty()) {
    return fmt::format("{}: /v1/models lists no model", up.url);
  }
  const Json& m = models["data"][0];
  if (up.type == "openai") {
    const std::string want = StringOr(report, "model", "");
    const std::string got = StringOr(m, "id", "");
    return want == got ? ""
                       : fmt::format("{} serves '{}', the report is of '{}'", up.url, got, want);
  }
  if (!m.contains("brisk") || !m["brisk"].is_object() || !m["brisk"].contains("serving_key")) {
    return fmt::format("{} reports no serving key (not a brisk serve?)", up.url);
  }
  const Json& got = m["brisk"]["serving_key"];
  const Json want = report.value("serving_key", Json());
  if (!want.is_object()) return "the gate report has no serving_key (use --save-gate's report)";
  if (StringOr(got, "id", "") != StringOr(want, "id", "")) {
    return fmt::format("{} serves {}, the report is of {}", up.url, StringOr(got, "id", "?"),
                       StringOr(want, "id", "?"));
  }
  return "";
}

void RolloutManager::Start(const Json& body, const std::string& who,
                           std::shared_ptr<http::Responder> res) {
  auto spec = ParseRolloutSpec(body);
  if (!spec.ok())
    return http::SendOpenAiError(*res, 400, "invalid_request_error", spec.status().message(),
                                 "invalid_rollout");
  const int t = FindTier(core_->config, spec->tier);
  if (t < 0) {
    return http::SendOpenAiError(*res, 404, "invalid_request_error",
                                 fmt::format("no tier '{}'", spec->tier), "tier_not_found");
  }
  {
    std::lock_guard lock(mu_);
    const auto& cur = tiers_[t]->rollout;
    if (cur && !cur->finished()) {
      return http::SendOpenAiError(*res, 409, "invalid_request_error",
                                   fmt::format("tier '{}' has rollout {} ({}); abort it first",
                                               spec->tier, cur->id(), StageName(cur->stage())),
                                   "rollout_in_progress");
    }
  }
  // The candidate's clients: the gate asks its upstreams what they serve.
  auto made = MakeCandidate(t, *spec);
  if (!made.ok()) {
    return http::SendOpenAiError(*res, 400, "invalid_request_error", made.status().message(),
                                 "invalid_rollout");
  }
  std::shared_ptr<TierRuntime> cand = std::move(*made);

  struct Pending {
    std::mutex mu;
    int left = 0;
    std::string refusal;
    std::string model;
  };
  auto pending = std::make_shared<Pending>();
  pending->left = static_cast<int>(spec->upstreams.size());
  auto shared_spec = std::make_shared<RolloutSpec>(std::move(*spec));
  for (size_t i = 0; i < shared_spec->upstreams.size(); ++i) {
    http::UpstreamRequest req;
    req.method = "GET";
    req.path = "/v1/models";
    const UpstreamConfig& up = shared_spec->upstreams[i];
    if (!up.api_key.empty()) req.headers.push_back({"Authorization", "Bearer " + up.api_key});
    cand->clients[i]->Fetch(std::move(req), [this, pending, shared_spec, cand, up, who, res,
                                             t](Expected<std::pair<int, std::string>> r) {
      std::string why;
      Json models;
      if (!r.ok()) {
        why = fmt::format("{}: {}", up.url, r.status().message());
      } else if (r->first != 200) {
        why = fmt::format("{}: /v1/models answered HTTP {}", up.url, r->first);
      } else {
        models = Json::parse(r->second, nullptr, false);
        why = GateRefusal(shared_spec->gate_report, up, models);
      }
      std::lock_guard pl(pending->mu);
      if (!why.empty() && pending->refusal.empty()) pending->refusal = why;
      if (why.empty() && pending->model.empty())
        pending->model = StringOr(models["data"][0], "id", "");
      if (--pending->left > 0) return;
      if (!pending->refusal.empty()) {
        std::lock_guard lock(mu_);
        AuditRefusal(shared_spec->tier, who, pending->refusal);
        return http::SendOpenAiError(*res, 412, "invalid_request_error",
                                     "the candidate did not pass the gate: " + pending->refusal,
                                     "gate_not_passed");
      }
      {
        std::lock_guard ml(cand->mu);
        if (cand->model.empty()) cand->model = pending->model;
      }
      if (shared_spec->model.empty()) shared_spec->model = pending->model;
      boost::asio::post(core_->db_io, [this, shared_spec, cand, who, res, t, key = pending->model] {
        // The shared record: every gateway picks it up on its next sync.
        const int64_t wall = WallMs();
        const std::string id =
            fmt::format("ro-{}-{}", shared_spec->tier, http::RandomItemId("").substr(0, 10));
        auto ro = std::make_shared<Rollout>(id, *shared_spec, who, RolloutClock::now());
        StoredRollout r;
        r.id = id;
        r.tier = shared_spec->tier;
        r.started_by = who;
        r.spec = RolloutSpecRecord(*shared_spec);
        r.started_ms = wall;
        r.stage = ro->stage();
        r.step = ro->step();
        r.stage_since_ms = wall;
        r.version = 1;
        RolloutDecision d;
        d.action = "start";
        d.who = who;
        d.from = d.to = ro->stage();
        d.step = ro->step();
        d.detail =
            fmt::format("candidate {} passed the gate",
                        StringOr(shared_spec->gate_report.value("serving_key", Json()), "id", key));
        const Json entry = AuditEntry(*ro, d, wall);
        Status st = store_->Insert(r, entry);
        if (!st.ok()) {
          if (st.code() == StatusCode::kInvalidArgument) {
            return http::SendOpenAiError(*res, 409, "invalid_request_error", st.message(),
                                         "rollout_in_progress");
          }
          return http::SendOpenAiError(*res, 503, "server_error",
                                       "the rollout cannot be stored now: " + st.message(),
                                       "store_unavailable");
        }
        LocalAudit(*ro, d, entry);
        {
          std::lock_guard lock(mu_);
          TierSlot& slot = *tiers_[t];
          slot.rollout = ro;
          slot.record = r;
          slot.candidate = cand;  // checked at the gate: kept, not built again
          slot.candidate_of = id;
        }
        SendJson(*res, 201, ro->StatusJson(RolloutClock::now()));
        ScheduleSync();
      });
    });
  }
}

Json RolloutManager::StatusJson() {
  Json data = Json::array();
  const auto now = RolloutClock::now();
  for (auto& slot : tiers_) {
    if (slot->rollout) data.push_back(slot->rollout->StatusJson(now));
    for (const auto& h : slot->history) data.push_back(h->StatusJson(now));
  }
  return {{"object", "list"},
          {"data", data},
          {"judge_skipped_busy", judge_skipped_},
          {"store", store_ok_.load() ? "ok" : "unreachable (rollouts frozen)"}};
}

// On a database thread: the decision is taken on the shared record as it is
// now, and written only if no gateway changed it meanwhile (then it is taken
// again on the new record).
void RolloutManager::Operator(const Json& body, bool promote, const std::string& who,
                              http::Responder& res) {
  const std::string tier = StringOr(body, "tier", "");
  if (FindTier(core_->config, tier) < 0)
    return http::SendOpenAiError(res, 404, "invalid_request_error",
                                 fmt::format("no tier '{}'", tier), "tier_not_found");
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto active = store_->Active();
    if (!active.ok()) {
      return http::SendOpenAiError(res, 503, "server_error",
                                   "the rollouts cannot be read now: " + active.status().message(),
                                   "store_unavailable");
    }
    const StoredRollout* r = nullptr;
    for (const StoredRollout& a : *active) {
      if (a.tier == tier) r = &a;
    }
    if (r == nullptr) {
      return http::SendOpenAiError(res, 409, "invalid_request_error",
                                   fmt::format("tier '{}' has no rollout", tier), "no_rollout");
    }
    auto ro = Build(*r, true);
    if (!ro.ok()) {
      return http::SendOpenAiError(res, 500, "server_error", ro.status().message(),
                                   "rollout_state");
    }
    const auto now = RolloutClock::now();
    auto d = promote ? (*ro)->Promote(who, now) : (*ro)->Abort(who, now);
    if (!d.ok())
      return http::SendOpenAiError(res, 409, "invalid_request_error", d.status().message(),
                                   "rollout_state");
    const int64_t wall = WallMs();
    StoredRollout next = *r;
    next.stage = (*ro)->stage();
    next.step = (*ro)->step();
    next.stage_since_ms = wall;
    next.version = r->version + 1;
    next.finished = (*ro)->finished();
    const Json entry = AuditEntry(**ro, *d, wall);
    auto won = store_->Decide(next, entry);
    if (!won.ok()) {
      return http::SendOpenAiError(res, 503, "server_error",
                                   "the decision cannot be stored now: " + won.status().message(),
                                   "store_unavailable");
    }
    if (!*won) continue;  // another gateway decided first: decide again on its state
    LocalAudit(**ro, *d, entry);
    SendJson(res, 200, (*ro)->StatusJson(now));
    ScheduleSync();
    return;
  }
  http::SendOpenAiError(res, 409, "invalid_request_error",
                        "the rollout kept changing under this request; try again", "rollout_state");
}

}  // namespace brisk::gateway
