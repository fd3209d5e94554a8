#include "gateway/gateway_server.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <functional>
#include <nlohmann/json.hpp>

#include "gateway/budget.h"
#include "gateway/cost_report.h"
#include "gateway/dashboard.h"
#include "gateway/data_scope.h"
#include "gateway/gateway_admission.h"
#include "gateway/gateway_core.h"
#include "gateway/gateway_routes.h"
#include "gateway/json_fields.h"
#include "gateway/prefix_routing.h"
#include "gateway/proxied_request.h"
#include "gateway/rollout_manager.h"
#include "gateway/shared_responses.h"
#include "http/caller_identity.h"
#include "http/header_gate.h"
#include "http/openai_error.h"
#include "http/responses_items.h"
#include "http/route_table.h"
#include "util/log.h"

namespace brisk::gateway {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The text routing rules and prefix affinity look at: chat messages' roles
// and text contents in order, or the completion prompt.
std::string PromptText(const Json& body, Endpoint endpoint) {
  std::string text;
  auto add = [&text](const Json& s) {
    if (s.is_string()) text += s.get_ref<const std::string&>();
  };
  if (endpoint == Endpoint::kResponses) {
    // The instructions, then each item's role and text, as chat messages read.
    add(AnyOr(body, "instructions"));
    text += '\n';
    const Json& input = AnyOr(body, "input");
    if (input.is_string()) return text + "user\n" + input.get<std::string>() + '\n';
    if (!input.is_array()) return text;
    for (const Json& item : input) {
      if (!item.is_object()) continue;
      add(AnyOr(item, "role"));
      text += '\n';
      const Json& content = AnyOr(item, "content");
      if (content.is_string()) add(content);
      if (content.is_array()) {
        for (const Json& part : content) add(AnyOr(part, "text"));
      }
      add(AnyOr(item, "arguments"));
      add(AnyOr(item, "output"));
      text += '\n';
    }
    return text;
  }
  if (endpoint == Endpoint::kDetokenize) return text;
  if (endpoint == Endpoint::kChat ||
      (endpoint == Endpoint::kTokenize && body.contains("messages"))) {
    auto msgs = body.find("messages");
    if (msgs == body.end() || !msgs->is_array()) return text;
    for (const Json& m : *msgs) {
      if (!m.is_object()) continue;
      add(AnyOr(m, "role"));
      text += '\n';
      auto content = m.find("content");
      if (content == m.end()) continue;
      if (content->is_string()) {
        add(*content);
      } else if (content->is_array()) {
        for (const Json& part : *content) {
          add(AnyOr(part, "text"));
        }
      }
      text += '\n';
    }
    return text;
  }
  auto prompt = body.find("prompt");
  if (prompt == body.end()) return text;
  if (prompt->is_string()) return prompt->get<std::string>();
  if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_string()) {
    return (*prompt)[0].get<std::string>();
  }
  return prompt->dump();  // token ids: their text form still identifies a shared prefix
}

}  // namespace

std::string ReplicaName(const std::string& url) {
  std::string s = url.substr(url.find("://") == std::string::npos ? 0 : url.find("://") + 3);
  return s.substr(0, s.find('/'));
}

PickerOptions MakePickerOptions(const GatewayConfig::Replicas& rc) {
  PickerOptions po;
  po.policy = rc.policy == "round_robin" ? PickPolicy::kRoundRobin : PickPolicy::kLeastLoaded;
  po.prefix_affinity = rc.prefix_affinity;
  po.load_factor = rc.load_factor;
  po.eject_after_failures = rc.eject_after_failures;
  po.eject_for = std::chrono::milliseconds(static_cast<int64_t>(rc.eject_s * 1000));
  po.queued_request_tokens = rc.queued_request_tokens;
  return po;
}

Status AddUpstreamClients(GatewayCore& core, const TierConfig& tc, TierRuntime* tier) {
  for (const UpstreamConfig& u : tc.upstreams) {
    http::UpstreamOptions uo;
    uo.base_url = u.url;
    uo.connect_timeout = std::chrono::milliseconds(
        static_cast<int64_t>(core.config.replicas.connect_timeout_s * 1000));
    auto client = http::UpstreamClient::Create(core.upstream_io.get_executor(), uo);
    if (!client.ok()) return client.status().WithContext(fmt::format("tier {}", tc.name));
    tier->clients.push_back(std::move(*client));
  }
  return Status::Ok();
}

GatewayCore::~GatewayCore() {
  if (http) http->Stop();
  if (health_timer) health_timer->cancel();
  work.reset();
  upstream_io.stop();
  db_work.reset();
  db_io.stop();
  // The last reference may be dropped on one of these threads: it cannot join itself.
  for (auto* threads : {&upstream_threads, &db_threads}) {
    for (std::thread& t : *threads) {
      if (!t.joinable()) continue;
      if (t.get_id() == std::this_thread::get_id()) {
        t.detach();
      } else {
        t.join();
      }
    }
  }
  // The upstream clients and the timer must not outlive the io_context they
  // run on (members are destroyed after this body, the io_context before
  // the tiers declared above it).
  health_timer.reset();
  rollout_timer.reset();
  rollouts.reset();
  responses.reset();
  tiers.clear();
  if (ledger) ledger->Flush();
}

std::vector<std::pair<std::string, int>> AdvertisedModels(GatewayCore& core) {
  std::vector<std::pair<std::string, int>> ids;
  auto listed = [&](const std::string& id) {
    return std::any_of(ids.begin(), ids.end(), [&](const auto& p) { return p.first == id; });
  };
  for (std::string& id : core.router->ModelIds()) ids.emplace_back(std::move(id), -1);
  for (auto& t : core.tiers) {
    std::string m = t->Model();
    if (!m.empty() && !listed(m)) ids.emplace_back(std::move(m), t->index);
  }
  return ids;
}

namespace {

// The router's plan, or for a model id learnt from a tier's upstreams, that tier. The
// NotFound's message lists every id the gateway answers to.
Expected<RoutePlan> PlanRoute(GatewayCore& core, const RequestFacts& facts) {
  auto plan = core.router->Route(facts);
  if (plan.ok() || plan.status().code() != StatusCode::kNotFound) return plan;
  const auto ids = AdvertisedModels(core);
  for (const auto& [id, tier] : ids) {
    if (tier >= 0 && id == facts.model) return RoutePlan{{tier}, "model"};
  }
  std::string names;
  for (const auto& [id, tier] : ids) names += (names.empty() ? "" : ", ") + id;
  return NotFound("The model '{}' does not exist here; models: {}", facts.model, names);
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void HandleGenerate(const std::shared_ptr<GatewayCore>& core, Endpoint endpoint,
                    http::Request&& req, std::shared_ptr<http::Responder> res) {
  const auto arrival = Clock::now();
  if (core->draining.load()) {
    http::SendOpenAiError(*res, 503, "server_error", "the gateway is shutting down", "draining");
    return;
  }
  Json body = Json::parse(req.body, nullptr, false);
  req.ReleaseBody();
  if (body.is_discarded() || !body.is_object()) {
    http::SendOpenAiError(*res, 400, "invalid_request_error",
                          "the request body is not a JSON object (check the JSON syntax)",
                          "invalid_json");
    return;
  }
  const bool tokens = endpoint == Endpoint::kTokenize || endpoint == Endpoint::kDetokenize;
  // /tokenize and /detokenize take no model on an engine: here it routes ("auto" without one).
  if (tokens && (!body.contains("model") || body["model"].is_null())) body["model"] = "auto";
  auto model = body.find("model");
  if (model == body.end() || !model->is_string() || model->get_ref<const std::string&>().empty()) {
    http::SendOpenAiError(*res, 400, "invalid_request_error",
                          "'model' is required: a tier name, a tier's model id, or \"auto\"", "",
                          "model");
    return;
  }
  if (endpoint == Endpoint::kChat) {
    auto msgs = body.find("messages");
    if (msgs == body.end() || !msgs->is_array() || msgs->empty()) {
      http::SendOpenAiError(*res, 400, "invalid_request_error",
                            "'messages' must be a non-empty array", "", "messages");
      return;
    }
  } else if (endpoint == Endpoint::kResponses) {
    const Json& input = AnyOr(body, "input");
    if (!input.is_string() && !input.is_array()) {
      http::SendOpenAiError(*res, 400, "invalid_request_error",
                            "'input' is required: a string or an array of input items", "",
                            "input");
      return;
    }
    const Json& prev = AnyOr(body, "previous_response_id");
    if (!prev.is_null() && (!prev.is_string() || prev.get_ref<const std::string&>().empty())) {
      http::SendOpenAiError(*res, 400, "invalid_request_error",
                            "'previous_response_id' must be a response id", "",
                            "previous_response_id");
      return;
    }
    if (const Json& store = AnyOr(body, "store"); !store.is_null() && !store.is_boolean()) {
      http::SendOpenAiError(*res, 400, "invalid_request_error", "'store' must be a boolean", "",
                            "store");
      return;
    }
  } else if (endpoint == Endpoint::kDetokenize) {
    if (!AnyOr(body, "tokens").is_array()) {
      http::SendOpenAiError(*res, 400, "invalid_request_error",
                            "'tokens' is required: an array of token ids", "", "tokens");
      return;
    }
  } else if (endpoint == Endpoint::kTokenize) {
    if (!body.contains("prompt") && !body.contains("messages")) {
      http::SendOpenAiError(*res, 400, "invalid_request_error",
                            "'prompt' or 'messages' is required", "", "prompt");
      return;
    }
  } else if (!body.contains("prompt")) {
    http::SendOpenAiError(*res, 400, "invalid_request_error", "'prompt' is required", "", "prompt");
    return;
  }
  if (auto s = body.find("stream"); s != body.end() && !s->is_null() && !s->is_boolean()) {
    http::SendOpenAiError(*res, 400, "invalid_request_error", "'stream' must be a boolean", "",
                          "stream");
    return;
  }

  Caller caller;
  if (const ApiKeyConfig* key = ResolveCaller(core->config.keys, req.Header("Authorization"))) {
    caller.tenant = key->tenant;
    caller.key_name = key->name;
    caller.feature = key->feature;
  }
  if (caller.feature.empty()) caller.feature = std::string(req.Header("X-Feature"));
  caller.traceparent = std::string(req.Header("traceparent"));
  if (endpoint == Endpoint::kResponses) {
    if (!AnyOr(body, "previous_response_id").is_string()) {
      return AdmitResponses(core, std::move(body), std::move(caller), std::move(res), arrival);
    }
    // Reading the previous response waits on the database: not on an I/O thread.
    boost::asio::post(core->db_io, [core, body = std::move(body), caller = std::move(caller),
                                    res = std::move(res), arrival]() mutable {
      try {
        AdmitResponses(core, std::move(body), std::move(caller), std::move(res), arrival);
      } catch (const std::exception& e) {
        log::Error("gateway: internal error admitting a Responses request: {}", e.what());
        http::SendOpenAiError(*res, 500, "server_error", "internal error", "internal_error");
      }
    });
    return;
  }
  Admit(core, endpoint, std::move(body), std::move(caller), std::move(res), arrival, nullptr);
}

void Admit(const std::shared_ptr<GatewayCore>& core, Endpoint endpoint, Json body, Caller caller,
           std::shared_ptr<http::Responder> res, Clock::time_point arrival,
           std::shared_ptr<const ResponsesTurn> turn) {
  auto model = body.find("model");
  const std::string prompt = PromptText(body, endpoint);
  RequestFacts facts;
  facts.model = model->get_ref<const std::string&>();
  facts.feature = caller.feature;
  facts.prompt_chars = static_cast<int64_t>(prompt.size());
  facts.has_tools = body.contains("tools") && body["tools"].is_array() && !body["tools"].empty();
  if (auto rf = body.find("response_format"); rf != body.end() && rf->is_object()) {
    std::string type = rf->value("type", "");
    facts.has_response_format = type == "json_object" || type == "json_schema";
  }
  facts.prompt_text = prompt;
  auto plan = PlanRoute(*core, facts);
  if (!plan.ok()) {
    http::SendOpenAiError(*res, 404, "invalid_request_error", plan.status().message(),
                          "model_not_found", "model");
    return;
  }
  // A cascade judges and re-sends chat and completions answers; the other
  // endpoints are answered by the plan's first tier.
  if (endpoint != Endpoint::kChat && endpoint != Endpoint::kCompletions) plan->tiers.resize(1);
  const std::string request_id =
      fmt::format("gw-{}-{}", core->instance_id, core->next_id.fetch_add(1) + 1);
  uint64_t affinity = 0;
  if (core->config.replicas.prefix_affinity) {
    const size_t n =
        std::min(prompt.size(), static_cast<size_t>(core->config.replicas.affinity_prefix_bytes));
    affinity = XXH3_64bits(prompt.data(), n);
    if (affinity == 0) affinity = 1;
  }
  // Before any generation the request's estimate is reserved against its key's and
  // feature's budgets, in the database every gateway shares: its prompt at the
  // first tier's input price (about 4 bytes a token) plus, when the client caps
  // it, its whole output at the output price.
  const TierConfig& first = core->config.tiers[plan->tiers[0]];
  int64_t max_output = 0;
  for (const char* k : {"max_tokens", "max_completion_tokens", "max_output_tokens"}) {
    max_output = std::max(max_output, IntOr(body, k, 0));
  }
  const double estimate = (static_cast<double>(prompt.size()) / 4 * first.prices.input_per_mtok +
                           static_cast<double>(max_output) * first.prices.output_per_mtok) /
                          1e6;
  LedgerRow refused;
  refused.request_id = request_id;
  refused.tenant = caller.tenant;
  refused.api_key_name = caller.key_name;
  refused.feature = caller.feature;
  refused.tier = first.name;
  refused.model = facts.model;
  refused.endpoint = EndpointName(endpoint);
  refused.status = 429;
  refused.outcome = "budget";
  refused.stream = BoolOr(body, "stream", false);
  refused.attempts = 0;
  auto start = [core, res, endpoint, body = std::move(body), caller, plan = std::move(*plan),
                affinity, arrival, request_id,
                turn = std::move(turn)](Budgets::Reservation reservation) mutable {
    core->active.fetch_add(1);
    auto pr = std::make_shared<ProxiedRequest>(core, std::move(res), endpoint, std::move(body),
                                               std::move(caller), std::move(plan), affinity,
                                               arrival, request_id, std::move(turn));
    pr->Start(std::move(reservation));
  };
  if (!core->budgets) return start({});
  boost::asio::post(core->db_io, [core, res, estimate, refused = std::move(refused),
                                  start = std::move(start)]() mutable {
    auto reserved = core->budgets->Reserve(refused.api_key_name, refused.feature, estimate,
                                           std::chrono::system_clock::now());
    if (reserved.ok()) return start(std::move(*reserved));
    const Status& st = reserved.status();
    if (st.code() == StatusCode::kUnavailable) {
      core->metrics->BudgetStoreOutages()->Inc();
      if (core->config.budget_policy.on_store_outage == "allow") {
        log::Warn("gateway: request {} admitted without its budget check: {}", refused.request_id,
                  st.message());
        return start({});
      }
      return http::SendOpenAiError(
          *res,
          http::MakeOpenAiError(
              503, "server_error",
              fmt::format("budgets cannot be checked now (budgets.on_store_outage: refuse): {}",
                          st.message()),
              "budget_store_unavailable"),
          {{"Retry-After", "1"}});
    }
    refused.time_unix_ms = UnixMs();
    core->metrics->Requests(refused.tier, refused.feature, "budget")->Inc();
    Json e = {{"error",
               {{"message", st.message()},
                {"type", "insufficient_quota"},
                {"param", nullptr},
                {"code", "budget_exceeded"}}}};
    const std::string id = refused.request_id;
    core->ledger->Append(std::move(refused), [res, e, id](const Status&) {
      SendJson(*res, 429, e, {{"X-Request-Id", id}});
    });
  });
}

GatewayServer::GatewayServer(std::shared_ptr<GatewayCore> core) : core_(std::move(core)) {}

GatewayServer::~GatewayServer() { Stop(); }

Expected<std::unique_ptr<GatewayServer>> GatewayServer::Start(GatewayConfig config,
                                                              std::unique_ptr<Ledger> ledger) {
  if (config.ledger.gateways > 1 && !config.ledger.url.starts_with("postgres")) {
    return InvalidArgument(
        "ledger.gateways is {}: gateways share budgets, rollouts and stored responses through "
        "PostgreSQL, so ledger.url must be a postgresql:// URL (it is '{}')",
        config.ledger.gateways, RedactLedgerUrl(config.ledger.url));
  }
  auto core = std::make_shared<GatewayCore>();
  core->config = std::move(config);
  core->ledger = std::move(ledger);
  core->created_unix = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  core->metrics = std::make_unique<GatewayMetrics>(core->registry);
  ASSIGN_OR_RETURN(core->access_log, AccessLog::Create(core->config.logging.access_log,
                                                       core->config.logging.access_log_path));
  if (!core->config.logging.otlp_endpoint.empty()) {
    ASSIGN_OR_RETURN(core->spans, SpanExporter::Create(core->config.logging.otlp_endpoint,
                                                       "brisk-gateway", core->registry));
  }
  core->dashboard = std::make_unique<DashboardStats>();
  ASSIGN_OR_RETURN(core->router, Router::Create(core->config));
  core->instance_id = http::RandomItemId("").substr(0, 12);
  if (!core->config.budgets.empty()) {
    // Spend and reservations live in the ledger's database, shared by every gateway on it.
    ASSIGN_OR_RETURN(auto db, OpenSqlDb(core->config.ledger.url));
    auto budgets = Budgets::Open(core->config.budgets, std::move(db),
                                 {core->config.budget_policy.reservation_ttl_s});
    if (!budgets.ok()) return budgets.status().WithContext("budgets");
    core->budgets = std::move(budgets).value();
  }
  const PickerOptions po = MakePickerOptions(core->config.replicas);
  core->work.emplace(core->upstream_io.get_executor());
  for (size_t t = 0; t < core->config.tiers.size(); ++t) {
    const TierConfig& tc = core->config.tiers[t];
    std::vector<std::string> names;
    for (const UpstreamConfig& u : tc.upstreams) names.push_back(ReplicaName(u.url));
    auto tier = std::make_unique<TierRuntime>(names, po);
    tier->index = static_cast<int>(t);
    tier->config = &tc;
    tier->names = names;
    tier->model = tc.model;
    RETURN_IF_ERROR(AddUpstreamClients(*core, tc, tier.get()));
    RETURN_IF_ERROR(StartPrefixRouting(*core, tier.get()));
    core->tiers.push_back(std::move(tier));
  }
  {
    // Rollouts are shared by every gateway on the ledger's database.
    ASSIGN_OR_RETURN(auto db, OpenSqlDb(core->config.ledger.url));
    auto store = RolloutStore::Open(std::move(db));
    if (!store.ok()) return store.status().WithContext("rollouts");
    core->rollouts = std::make_unique<RolloutManager>(core.get(), std::move(store).value());
  }
  {
    // The stored responses live in the ledger's database.
    ASSIGN_OR_RETURN(auto db, OpenSqlDb(core->config.ledger.url));
    const auto& rc = core->config.responses;
    auto store = SharedResponseStore::Open(
        std::move(db), {rc.max_entries, rc.max_bytes, static_cast<int64_t>(rc.ttl_s)});
    if (!store.ok()) return store.status().WithContext("the Responses API's store");
    core->responses = std::move(store).value();
  }
  {
    ASSIGN_OR_RETURN(auto db, OpenSqlDb(core->config.ledger.url));
    auto members = FleetMembers::Open(std::move(db));
    if (!members.ok()) return members.status().WithContext("the gateways table");
    core->members = std::move(members).value();
  }
  core->db_work.emplace(core->db_io.get_executor());
  for (int i = 0; i < 2; ++i) {
    core->db_threads.emplace_back([c = core.get()] {
      for (;;) {  // an exception from one job must not end the thread
        try {
          c->db_io.run();
          return;
        } catch (const std::exception& e) {
          log::Error("gateway: internal error in a database job: {}", e.what());
        }
      }
    });
  }
  RegisterGauges(core);
  for (int i = 0; i < 2; ++i) {
    core->upstream_threads.emplace_back([c = core.get()] { c->upstream_io.run(); });
  }
  core->rollouts->Sync();  // the running rollouts, before the first request
  StartTimers(core);

  const GatewayConfig::Server& sc = core->config.server;
  http::ServerOptions opts = ServerOptionsOf(sc);
  HeaderGateConfig gate;
  gate.keys = core->config.keys;
  gate.routes = Routes(core);
  opts.on_headers = [gate](const http::Request& head) { return CheckHeaders(gate, head); };
  auto http = http::Server::Start(
      opts, [routes = gate.routes](http::Request&& req, std::shared_ptr<http::Responder> res) {
        // One boundary for exceptions (the JSON library on a client's body):
        // the request gets a 500, the process keeps serving.
        try {
          routes.Dispatch(std::move(req), res);
        } catch (const std::exception& e) {
          log::Error("gateway: internal error handling {}: {}", req.path, e.what());
          http::SendOpenAiError(*res, 500, "server_error", "internal error", "internal_error");
        }
      });
  if (!http.ok()) return http.status().WithContext("gateway");
  core->http = std::move(*http);
  core->fleet_view.SetAddress(fmt::format("{}:{}", sc.host, core->http->port()));
  log::Info("gateway: listening on {}:{} with {} tier(s), ledger {}", sc.host, core->http->port(),
            core->tiers.size(), core->ledger->kind());
  return std::unique_ptr<GatewayServer>(new GatewayServer(std::move(core)));
}

int GatewayServer::port() const { return core_->http ? core_->http->port() : 0; }

void GatewayServer::BeginDrain() {
  core_->draining.store(true);
  if (core_->http) core_->http->StopAccepting();
}

int64_t GatewayServer::active_requests() const { return core_->active.load(); }

void GatewayServer::Stop() {
  if (!core_) return;
  if (core_->http) core_->http->Stop();
  if (core_->health_timer) {
    boost::asio::post(core_->upstream_io, [t = core_->health_timer.get()] { t->cancel(); });
  }
  for (auto* timer : {core_->rollout_timer.get(), core_->heartbeat_timer.get()}) {
    if (timer) boost::asio::post(core_->upstream_io, [timer] { timer->cancel(); });
  }
  core_->ledger->Flush();
}

}  // namespace brisk::gateway
