#include "gateway/gateway_routes.h"

#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <functional>
#include <optional>

#include "gateway/budget.h"
#include "gateway/cost_report.h"
#include "gateway/dashboard.h"
#include "gateway/data_scope.h"
#include "gateway/gateway_admission.h"
#include "gateway/rollout_manager.h"
#include "http/caller_identity.h"
#include "http/openai_error.h"
#include "util/log.h"

namespace brisk::gateway {

using Json = nlohmann::json;

void SendJson(http::Responder& res, int status, const Json& body, http::Headers extra) {
  extra.push_back({"Content-Type", "application/json"});
  res.Send(status, std::move(extra), body.dump(-1, ' ', false, Json::error_handler_t::replace));
}

namespace {

void HandleModels(const std::shared_ptr<GatewayCore>& core, http::Responder& res) {
  Json data = Json::array();
  for (const auto& [id, tier] : AdvertisedModels(*core)) {
    data.push_back({{"id", id},
                    {"object", "model"},
                    {"created", core->created_unix},
                    {"owned_by", "brisk-gateway"}});
  }
  SendJson(res, 200, {{"object", "list"}, {"data", data}});
}

// The caller's DataScope, or null after answering 401.
std::optional<DataScope> ScopeOrRefuse(const GatewayCore& core, const http::Request& req,
                                       http::Responder& res) {
  const std::string_view auth = req.Header("Authorization");
  auto scope = ResolveDataScope(core.config, auth);
  if (!scope) http::SendOpenAiError(res, UnauthorizedError(auth));
  return scope;
}

void HandleCost(const std::shared_ptr<GatewayCore>& core, const http::Request& req,
                std::shared_ptr<http::Responder> res) {
  auto scope = ScopeOrRefuse(*core, req, *res);
  if (!scope) return;
  const size_t q = req.target.find('?');
  const std::string query = q == std::string::npos ? "" : req.target.substr(q + 1);
  auto parsed = ParseCostQuery(query);
  if (!parsed.ok()) {
    http::SendOpenAiError(*res, 400, "invalid_request_error", parsed.status().message(), "");
    return;
  }
  if (!scope->all) {
    if (parsed->tenant && *parsed->tenant != scope->tenant) {
      http::SendOpenAiError(*res, 403, "invalid_request_error",
                            "this API key reads only its own tenant's cost data",
                            "permission_denied", "tenant");
      return;
    }
    parsed->tenant = scope->tenant;
  }
  // The query may read a large table: off the I/O thread.
  boost::asio::post(core->upstream_io, [core, res, cq = *parsed] {
    auto groups = core->ledger->Query(cq);
    if (!groups.ok()) {
      http::SendOpenAiError(*res, 500, "server_error", groups.status().message(), "ledger_error");
      return;
    }
    SendJson(*res, 200, CostReportJson(cq, *groups));
  });
}

}  // namespace

// The route table: the header gate (before the body) and the dispatch read it.
// Handlers hold the core weakly: a request that arrives while the gateway
// stops gets a 503.
http::RouteTable Routes(const std::shared_ptr<GatewayCore>& core) {
  using Handler = std::function<void(const std::shared_ptr<GatewayCore>&, http::Request&&,
                                     std::shared_ptr<http::Responder>)>;
  std::weak_ptr<GatewayCore> weak = core;
  auto to = [weak](Handler h) -> http::RouteHandler {
    return [weak, h = std::move(h)](http::Request&& req, std::shared_ptr<http::Responder> res) {
      auto c = weak.lock();
      if (!c) return http::SendOpenAiError(*res, 503, "server_error", "shutting down", "draining");
      h(c, std::move(req), std::move(res));
    };
  };
  auto generate = [&](Endpoint endpoint) {
    return to([endpoint](const std::shared_ptr<GatewayCore>& c, http::Request&& req,
                         std::shared_ptr<http::Responder> res) {
      HandleGenerate(c, endpoint, std::move(req), std::move(res));
    });
  };
  auto response_by_id = to([](const std::shared_ptr<GatewayCore>& c, http::Request&& req,
                              std::shared_ptr<http::Responder> res) {
    boost::asio::post(c->db_io, [c, req = std::move(req), res = std::move(res)] {
      try {
        ResponseById(c, req, *res);
      } catch (const std::exception& e) {
        log::Error("gateway: internal error reading a stored response: {}", e.what());
        http::SendOpenAiError(*res, 500, "server_error", "internal error", "internal_error");
      }
    });
  });
  auto models = to([](const std::shared_ptr<GatewayCore>& c, http::Request&&,
                      std::shared_ptr<http::Responder> res) { HandleModels(c, *res); });
  auto cost = to([](const std::shared_ptr<GatewayCore>& c, http::Request&& req,
                    std::shared_ptr<http::Responder> res) { HandleCost(c, req, res); });
  auto budgets = to([](const std::shared_ptr<GatewayCore>& c, http::Request&& req,
                       std::shared_ptr<http::Responder> res) {
    auto scope = ScopeOrRefuse(*c, req, *res);
    if (!scope) return;
    if (!c->budgets) {
      return res->Send(200, {{"Content-Type", "application/json"}},
                       R"({"object":"budgets","data":[]})");
    }
    boost::asio::post(c->db_io, [c, res, scope = std::move(*scope)] {
      auto snap = c->budgets->SnapshotJson(std::chrono::system_clock::now(),
                                           scope.all ? nullptr : &scope.key_names);
      if (!snap.ok()) {
        return http::SendOpenAiError(
            *res, 503, "server_error",
            fmt::format("budgets cannot be read now: {}", snap.status().message()),
            "budget_store_unavailable");
      }
      res->Send(200, {{"Content-Type", "application/json"}}, snap->dump());
    });
  });
  auto health = to([](const std::shared_ptr<GatewayCore>&, http::Request&&,
                      std::shared_ptr<http::Responder> res) {
    SendJson(*res, 200, {{"status", "ok"}});
  });
  auto ready = to([](const std::shared_ptr<GatewayCore>& c, http::Request&&,
                     std::shared_ptr<http::Responder> res) {
    if (c->draining.load()) return SendJson(*res, 503, {{"status", "draining"}});
    // Still ready without the database (the gateway keeps serving); the state is shown.
    SendJson(*res, 200,
             {{"status", "ready"}, {"database", c->rollouts->store_ok() ? "ok" : "unreachable"}});
  });
  auto metrics = to([](const std::shared_ptr<GatewayCore>& c, http::Request&&,
                       std::shared_ptr<http::Responder> res) {
    res->Send(200, {{"Content-Type", std::string(metrics::kContentType)}}, c->registry.Render());
  });
  auto dashboard =
      to([](const std::shared_ptr<GatewayCore>& c, http::Request&& req,
            std::shared_ptr<http::Responder> res) { ServeDashboard(*c, req, std::move(res)); });
  auto admin = to([](const std::shared_ptr<GatewayCore>& c, http::Request&& req,
                     std::shared_ptr<http::Responder> res) {
    c->rollouts->HandleAdmin(std::move(req), std::move(res));
  });
  http::RouteTable routes({
      {"/v1/chat/completions", {"POST"}, true, true, generate(Endpoint::kChat)},
      {"/v1/completions", {"POST"}, true, true, generate(Endpoint::kCompletions)},
      {"/v1/responses", {"POST"}, true, true, generate(Endpoint::kResponses)},
      {"/v1/responses/", {"GET", "DELETE"}, false, true, response_by_id},
      {"/v1/responses/{}/input_items", {"GET"}, false, true, response_by_id},
      {"/tokenize", {"POST"}, true, true, generate(Endpoint::kTokenize)},
      {"/detokenize", {"POST"}, true, true, generate(Endpoint::kDetokenize)},
      {"/v1/models", {"GET", "HEAD"}, false, true, models},
      // Cost data takes a caller's key or the admin key; the handlers check it
      // (data_scope.h), so the header gate lets the admin key through.
      {"/v1/cost", {"GET"}, false, false, cost},
      {"/v1/budgets", {"GET"}, false, false, budgets},
      {"/health", {"GET", "HEAD"}, false, false, health},
      {"/ready", {"GET", "HEAD"}, false, false, ready},
      {"/metrics", {"GET"}, false, false, metrics},
      // The admin API checks its own key (rollout.admin_key), not the callers'.
      {"/admin/rollouts", {"GET", "POST"}, false, false, admin},
      {"/admin/rollouts/promote", {"POST"}, true, false, admin},
      {"/admin/rollouts/abort", {"POST"}, true, false, admin},
      {"/admin/audit", {"GET"}, false, false, admin},
  });
  for (const char* path : kDashboardPaths) routes.Add({path, {"GET"}, false, false, dashboard});
  return routes;
}

}  // namespace brisk::gateway
