#include "server/openai_server.h"

#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <latch>
#include <memory>
#include <thread>

#include "http/header_gate.h"
#include "server/openai_api.h"
#include "server/response_stream.h"
#include "server/server_metrics.h"
#include "server/structured_output.h"
#include "server/token_endpoints.h"
#include "util/log.h"

namespace brisk {
namespace {

namespace net = boost::asio;
using http::Headers;

const Headers kJson = {{"Content-Type", "application/json"}};

// Bodies above this are prepared on the bulk pool, so that parsing and
// tokenizing a multi-megabyte prompt never delays a small request.
constexpr size_t kBulkBodyBytes = 64 << 10;

AccessOutcome OutcomeOf(const std::string& outcome) {
  if (outcome == "ok") return AccessOutcome::kOk;
  if (outcome == "cancelled") return AccessOutcome::kCancelled;
  if (outcome == "rejected") return AccessOutcome::kRejected;
  if (outcome == "timeout") return AccessOutcome::kTimeout;
  if (outcome == "invalid") return AccessOutcome::kInvalid;
  return AccessOutcome::kError;
}

}  // namespace

// Worker threads of the front door (not the HTTP I/O threads, not the
// engine thread): request preparation and response formatting run here, each
// request on a strand of its own. Shared with the engine's sinks, so an output
// that arrives after Stop() is posted to a stopped pool and dropped.
struct OpenAiServer::Executors {
  Executors(int fast_threads, int bulk_threads) : fast(fast_threads), bulk(bulk_threads) {
    LowerPriority(bulk, bulk_threads);
  }
  // Bulk threads run at nice 10: parsing and tokenizing megabytes (often an
  // attacker's) takes CPU from engine steps and small requests only when the
  // cores have it to spare.
  static void LowerPriority(net::thread_pool& pool, int threads) {
    // Each thread takes exactly one of these tasks (they wait for each other).
    auto all = std::make_shared<std::latch>(threads);
    for (int i = 0; i < threads; ++i)
      net::post(pool, [all] {
        ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
        all->arrive_and_wait();
      });
    all->wait();
  }
  net::thread_pool fast;  // small requests and every response
  net::thread_pool bulk;  // preparation of large bodies
  net::any_io_executor NewStrand(size_t body_bytes) {
    if (body_bytes > kBulkBodyBytes) return net::make_strand(bulk.get_executor());
    return net::make_strand(fast.get_executor());
  }
  void Stop() {
    fast.stop();
    bulk.stop();
    fast.join();
    bulk.join();
  }
};

http::RouteTable OpenAiServer::Routes() {
  using Member = void (OpenAiServer::*)(http::Request&&, std::shared_ptr<http::Responder>);
  auto to = [this](Member m) -> http::RouteHandler {
    return [this, m](http::Request&& req, std::shared_ptr<http::Responder> res) {
      (this->*m)(std::move(req), std::move(res));
    };
  };
  const bool metrics_key = config_.server.metrics_require_key;
  return http::RouteTable({
      {"/health", {"GET", "HEAD"}, false, false, to(&OpenAiServer::Health)},
      {"/ready", {"GET", "HEAD"}, false, false, to(&OpenAiServer::Ready)},
      {"/metrics", {"GET"}, false, metrics_key, to(&OpenAiServer::Metrics)},
      {"/load", {"GET"}, false, false, to(&OpenAiServer::LoadRoute)},
      {"/v1/models", {"GET"}, false, false, to(&OpenAiServer::Models)},
      {"/v1/chat/completions", {"POST"}, true, true, to(&OpenAiServer::ChatCompletions)},
      {"/v1/completions", {"POST"}, true, true, to(&OpenAiServer::Completions)},
      {"/v1/responses", {"POST"}, true, true, to(&OpenAiServer::Responses)},
      {"/v1/responses/", {"GET", "DELETE"}, false, true, to(&OpenAiServer::ResponseById)},
      {"/v1/responses/{}/input_items", {"GET"}, false, true, to(&OpenAiServer::ResponseById)},
      {"/tokenize", {"POST"}, true, true, to(&OpenAiServer::TokenizeRoute)},
      {"/detokenize", {"POST"}, true, true, to(&OpenAiServer::DetokenizeRoute)},
      {"/kv/block_hashes/v1/chat/completions",
       {"POST"},
       true,
       true,
       to(&OpenAiServer::ChatBlockHashes)},
      {"/kv/block_hashes/v1/completions",
       {"POST"},
       true,
       true,
       to(&OpenAiServer::CompletionBlockHashes)},
  });
}

namespace {

bool IsWildcardHost(const std::string& h) { return h.empty() || h == "0.0.0.0" || h == "::"; }

}  // namespace

// What can be refused on the header section alone, before a body byte is
// read or buffered: unknown routes, a missing or wrong key, a POST that is
// not JSON (415: browsers' "simple" cross-origin POSTs), and, with
// authentication off, a Host that is not this machine's (DNS rebinding).
HeaderGateConfig OpenAiServer::GateConfig(const InferenceConfig& config, http::RouteTable routes) {
  HeaderGateConfig g;
  g.routes = std::move(routes);
  if (config.keys.empty()) {
    if (!IsWildcardHost(config.server.host))
      g.allowed_hosts = {"localhost", "127.0.0.1", "[::1]", config.server.host};
  } else {
    g.keys = config.keys;
  }
  return g;
}

OpenAiServer::OpenAiServer(const InferenceConfig& config, EngineClient& engine,
                           const PromptRenderer& renderer, std::string model_id,
                           std::unique_ptr<AccessLog> access_log)
    : config_(config),
      engine_(engine),
      created_unix_(std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count()),
      metrics_(std::make_unique<ServerMetrics>(registry_)),
      ignored_fields_(std::make_unique<IgnoredFieldCounter>(registry_)),
      access_log_(access_log ? std::move(access_log) : AccessLog::Disabled()),
      executors_(std::make_shared<Executors>(std::max(2, config.server.http_threads), 2)) {
  prep_.config = &config_;
  prep_.model_id = std::move(model_id);
  prep_.renderer = &renderer;
  prep_.engine = engine.info();
  prep_.constraints = &constraints_;
  prep_.reasoning = ResolveReasoningMarkers(
      config_.model.reasoning, {config_.model.reasoning_start, config_.model.reasoning_end},
      renderer.chat_template() ? std::string_view(renderer.chat_template()->source())
                               : std::string_view());
  if (config_.cache.kv_events.enabled)
    block_hasher_ = std::make_unique<ExternalBlockHasher>(config_.cache.kv_events.hash_seed);
  metrics_->WatchEngine(registry_, engine_);
  std::atomic<int64_t>* active = &active_;
  registry_.AddCallbackGauge("brisk:http_requests_in_flight", "Generation requests being served.",
                             {}, [active] { return double(active->load()); });
  for (std::string_view stage : {"tokenize", "queue", "prefill", "decode", "write"})
    stage_seconds_[std::string(stage)] = registry_.GetHistogram(
        "brisk_request_stage_seconds",
        "Per-stage latency budget of completed generation requests (Server-Timing).",
        metrics::LatencyBucketsSeconds(), {{"stage", std::string(stage)}});
}

OpenAiServer::~OpenAiServer() {
  Stop();
  executors_->Stop();
}

Expected<std::unique_ptr<OpenAiServer>> OpenAiServer::Start(const InferenceConfig& config,
                                                            EngineClient& engine,
                                                            const PromptRenderer& renderer,
                                                            std::string model_id,
                                                            std::unique_ptr<AccessLog> access_log) {
  std::unique_ptr<OpenAiServer> s(
      new OpenAiServer(config, engine, renderer, std::move(model_id), std::move(access_log)));
  if (!config.logging.otlp_endpoint.empty()) {
    auto spans = SpanExporter::Create(config.logging.otlp_endpoint, "brisk-serve", s->registry_);
    if (!spans.ok()) return spans.status();
    s->spans_ = std::move(*spans);
  }
  http::ServerOptions ho = ServerOptionsOf(config.server);
  OpenAiServer* self = s.get();
  s->routes_ = s->Routes();
  ho.on_headers = [self, gate = GateConfig(config, s->routes_)](const http::Request& head) {
    auto early = CheckHeaders(gate, head);
    if (!early) return early;
    const char* outcome = early->status == 401 ? "rejected" : "invalid";
    self->metrics_->outcome[outcome]->Inc();
    const bool chat = head.path == "/v1/chat/completions";
    if (chat || head.path == "/v1/completions") {  // generation requests get their line
      ResponseSummary sum;
      sum.http_status = early->status;
      sum.outcome = outcome;
      sum.total_s = 0;
      self->LogAccess(head, chat ? 0 : 1, "", nullptr, sum);
    }
    return early;
  };
  if (config.keys.empty() && IsWildcardHost(config.server.host))
    log::Warn(
        "listening on all interfaces with authentication off (no keys:): anyone who "
        "reaches this port can generate");
  auto http =
      http::Server::Start(ho, [self](http::Request&& req, std::shared_ptr<http::Responder> res) {
        self->routes_.Dispatch(std::move(req), std::move(res));
      });
  if (!http.ok()) return http.status();
  s->http_ = std::move(*http);
  return s;
}

int OpenAiServer::port() const { return http_ ? http_->port() : 0; }

void OpenAiServer::BeginDrain() { draining_.store(true); }

void OpenAiServer::Stop() {
  draining_.store(true);
  if (http_) {
    // Responses to cancelled requests (an error event and [DONE] for
    // streams, 503 otherwise) get a moment to flush before connections close.
    const auto until = Clock::now() + std::chrono::milliseconds(500);
    while (active_.load() > 0 && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    http_->Stop();
  }
  access_log_->Flush(std::chrono::seconds(2));
}

void OpenAiServer::Health(http::Request&&, std::shared_ptr<http::Responder> res) {
  res->Send(200, kJson, R"({"status":"ok"})");
}

void OpenAiServer::Ready(http::Request&&, std::shared_ptr<http::Responder> res) {
  if (draining_.load())
    res->Send(503, kJson, R"({"status":"draining"})");
  else
    res->Send(200, kJson, R"({"status":"ready"})");
}

// What a gateway reads to choose a replica (cheap: one snapshot, no lock on
// the engine thread): queue depth, running sequences, KV fill.
void OpenAiServer::LoadRoute(http::Request&&, std::shared_ptr<http::Responder> res) {
  const EngineLoad load = engine_.Load();
  const SchedulerStats& s = load.scheduler;
  int32_t waiting = 0, running = 0;
  for (int p = 0; p < kNumPriorities; ++p) {
    waiting += std::max(s.waiting[p], load.queued[p]);
    running += s.running[p];
  }
  const int64_t total = s.blocks_total > 0 ? s.blocks_total : load.kv_blocks_total;
  const double kv_fill =
      total > 0 ? static_cast<double>(s.blocks_used) / static_cast<double>(total) : 0.0;
  res->Send(200, kJson,
            fmt::format(R"({{"waiting":{},"running":{},"kv_fill":{:.4f},"kv_blocks_used":{},)"
                        R"("kv_blocks_total":{},"tokens_per_s":{:.1f},"finished_per_s":{:.3f},)"
                        R"("active_requests":{},"draining":{}}})",
                        waiting, running, kv_fill, s.blocks_used, total, load.tokens_per_s,
                        load.finished_per_s, active_.load(), draining_.load() ? "true" : "false"));
}

void OpenAiServer::Metrics(http::Request&&, std::shared_ptr<http::Responder> res) {
  res->Send(200, {{"Content-Type", std::string(metrics::kContentType)}}, registry_.Render());
}

void OpenAiServer::SetServingInfo(nlohmann::ordered_json info) {
  std::lock_guard lock(serving_info_mu_);
  serving_info_ = std::move(info);
}

void OpenAiServer::Models(http::Request&&, std::shared_ptr<http::Responder> res) {
  nlohmann::ordered_json info;
  {
    std::lock_guard lock(serving_info_mu_);
    info = serving_info_;
  }
  res->Send(200, kJson, api::ModelsBody({prep_.model_id}, created_unix_, info));
}

void OpenAiServer::ChatCompletions(http::Request&& req, std::shared_ptr<http::Responder> res) {
  Generate(0, std::move(req), std::move(res));
}

void OpenAiServer::Completions(http::Request&& req, std::shared_ptr<http::Responder> res) {
  Generate(1, std::move(req), std::move(res));
}

// The Responses API: parsed, prepared and answered on a worker strand
// (openai_server_responses.cc), like chat.
void OpenAiServer::Responses(http::Request&& req, std::shared_ptr<http::Responder> res) {
  const auto arrival = Clock::now();
  if (draining_.load())
    return Reject(
        http::MakeOpenAiError(503, "server_error", "The server is shutting down", "draining"),
        "error", *res);
  auto strand = executors_->NewStrand(req.body.size());
  net::post(strand, [this, req = std::move(req), res = std::move(res), arrival, strand]() mutable {
    RunResponses(req, std::move(res), arrival, strand);
  });
}

void OpenAiServer::ResponseById(http::Request&& req, std::shared_ptr<http::Responder> res) {
  auto strand = executors_->NewStrand(0);
  net::post(strand,
            [this, req = std::move(req), res = std::move(res)] { RunResponseById(req, *res); });
}

void OpenAiServer::TokenizeRoute(http::Request&& req, std::shared_ptr<http::Responder> res) {
  TokenEndpoint(true, std::move(req), std::move(res));
}

void OpenAiServer::DetokenizeRoute(http::Request&& req, std::shared_ptr<http::Responder> res) {
  TokenEndpoint(false, std::move(req), std::move(res));
}

http::Headers OpenAiServer::ReportIgnored(const std::vector<std::string>& fields) {
  if (fields.empty()) return {};
  ignored_fields_->Count(fields);
  return {{std::string(kIgnoredFieldsHeader), IgnoredFieldsHeaderValue(fields)}};
}

void OpenAiServer::TokenEndpoint(bool tokenize, http::Request&& req,
                                 std::shared_ptr<http::Responder> res) {
  // Tokenizing a large body is real work: never on the I/O thread.
  auto strand = executors_->NewStrand(req.body.size());
  net::post(strand, [this, tokenize, req = std::move(req), res = std::move(res)] {
    auto caller = Authenticate(config_, req.Header("Authorization"));
    if (auto* e = std::get_if<api::ApiError>(&caller)) return http::SendOpenAiError(*res, *e);
    auto answer = tokenize ? Tokenize(prep_, req.body) : Detokenize(prep_, req.body);
    if (auto* e = std::get_if<api::ApiError>(&answer)) return http::SendOpenAiError(*res, *e);
    auto& a = std::get<TokenEndpointAnswer>(answer);
    Headers h = kJson;
    for (auto& kv : ReportIgnored(a.ignored_fields)) h.push_back(std::move(kv));
    res->Send(200, std::move(h), std::move(a.body));
  });
}

void OpenAiServer::Reject(const api::ApiError& e, const char* outcome, http::Responder& res,
                          Headers extra) {
  metrics_->outcome[outcome]->Inc();
  http::SendOpenAiError(res, e, std::move(extra));
}

void OpenAiServer::Generate(int endpoint, http::Request&& req,
                            std::shared_ptr<http::Responder> res) {
  const auto arrival = Clock::now();
  if (draining_.load())
    return Reject(
        http::MakeOpenAiError(503, "server_error", "The server is shutting down", "draining"),
        "error", *res);
  auto strand = executors_->NewStrand(req.body.size());
  net::post(strand,
            [this, endpoint, req = std::move(req), res = std::move(res), arrival,
             strand]() mutable { RunGeneration(endpoint, req, std::move(res), arrival, strand); });
}

void OpenAiServer::RunGeneration(int endpoint, const http::Request& req,
                                 std::shared_ptr<http::Responder> res, Clock::time_point arrival,
                                 const net::any_io_executor& strand) {
  const auto ep = endpoint == 1 ? api::Endpoint::kCompletions : api::Endpoint::kChatCompletions;
  auto prepared = PrepareRequest(prep_, ep, req, arrival);
  if (auto* e = std::get_if<api::ApiError>(&prepared)) {
    const char* outcome = e->http_status == 401 ? "rejected" : "invalid";
    Reject(*e, outcome, *res);
    ResponseSummary s;
    s.http_status = e->http_status;
    s.outcome = outcome;
    s.total_s = std::chrono::duration<double>(Clock::now() - arrival).count();
    LogAccess(req, endpoint, "", nullptr, s);
    return;
  }
  auto pr = std::make_shared<PreparedRequest>(std::move(std::get<PreparedRequest>(prepared)));
  const auto prepared_at = Clock::now();
  // The caller's trace (a new one if it sent no valid traceparent); our
  // span goes back in the answer's traceparent.
  const TraceContext trace = StartTrace(req.Header("traceparent"));

  ResponseStream::Options o;
  o.prepared = prepared_at;
  o.trace_id = trace.trace_id;
  o.endpoint = ep;
  o.id = api::NewRequestId(ep);
  o.model_id = prep_.model_id;
  o.created_unix = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  o.stream = pr->stream;
  o.include_usage = pr->include_usage;
  o.continuous_usage = pr->continuous_usage;
  for (const GenerationRequest& g : pr->prompts) o.prompt_tokens += int64_t(g.prompt.size());
  o.extra_headers = ReportIgnored(pr->ignored_fields);
  o.extra_headers.emplace_back("traceparent", trace.Traceparent());
  NoteConstraint(*pr, &o.extra_headers);
  o.n = pr->n;
  o.num_prompts = static_cast<int>(pr->prompts.size());
  o.priority = pr->priority;
  o.arrival = arrival;
  o.logprobs = pr->logprobs;
  o.tokenizer = &prep_.renderer->tokenizer();
  o.render_special = pr->render_special;
  o.echo_prompts = pr->echo_prompts;
  o.echo_token_prompts = pr->echo_token_prompts;
  o.tool_calls = !pr->tool_choice.empty() && pr->tool_choice != "none";
  o.tool_calls_auto = pr->tool_choice == "auto";
  o.reasoning = pr->reasoning;
  o.reasoning_start = pr->reasoning_start;
  o.constraint_after_reasoning = pr->constraint_after_reasoning;
  if (!pr->tool_choice.empty())
    o.extra_headers.emplace_back("x-brisk-tool-choice", pr->tool_choice);
  ++active_;
  // The access log needs the request's headers (remote, model), not its body.
  auto head = std::make_shared<http::Request>();
  head->remote = req.remote;
  head->headers = req.headers;
  std::string id = o.id;
  auto stream = std::make_shared<ResponseStream>(
      std::move(o), res, *metrics_, engine_,
      [this, head, endpoint, id, pr, trace](const ResponseSummary& s) {
        --active_;
        if (pr->constraint && s.finish_reason == "length")
          metrics_->structured_output_failures["length"]->Inc();
        RecordStages(trace, endpoint, s);
        LogAccess(*head, endpoint, id, pr.get(), s);
      });

  for (size_t i = 0; i < pr->prompts.size(); ++i) {
    const int prompt_index = static_cast<int>(i);
    auto request_id = engine_.Submit(
        std::move(pr->prompts[i]),
        [stream, strand, prompt_index](const SequenceOutput& out, const Status& error) {
          net::post(strand, [stream, prompt_index, out, error] {
            stream->OnOutput(prompt_index, out, error);
          });
        });
    if (!request_id.ok()) return stream->FailSubmit(request_id.status());
    stream->AddEngineRequest(*request_id);
  }
  pr->prompts.clear();  // moved out; the summary keeps tenant and feature
  if (config_.response.cancel_on_disconnect) {
    std::weak_ptr<ResponseStream> weak = stream;
    res->OnClose([weak, strand] {
      net::post(strand, [weak] {
        if (auto s = weak.lock()) s->OnClientGone();
      });
    });
  }
}

void OpenAiServer::NoteConstraint(const PreparedRequest& pr, http::Headers* headers) {
  if (!pr.constraint) return;
  metrics_->constrained_requests->Inc();
  if (pr.constraint_compiled_now) metrics_->grammar_compile->Observe(pr.constraint->compile_s);
  if (!pr.unenforced_keywords.empty())
    headers->emplace_back(std::string(kUnenforcedKeywordsHeader),
                          UnenforcedKeywordsHeaderValue(pr.unenforced_keywords));
}

void OpenAiServer::LogAccess(const http::Request& req, int endpoint, const std::string& id,
                             const PreparedRequest* prep, const ResponseSummary& s) {
  if (!access_log_->enabled()) return;
  AccessLogRecord r;
  r.request_id = id;
  if (prep) {
    r.tenant = prep->tenant;
    r.feature = prep->feature;
    r.stream = prep->stream;
    r.priority = std::string(PriorityName(prep->priority));
  }
  r.model = prep_.model_id;
  r.endpoint = endpoint == 1 ? "completions" : endpoint == 2 ? "responses" : "chat.completions";
  r.status = s.http_status;
  r.outcome = OutcomeOf(s.outcome);
  r.prompt_tokens = s.usage.prompt_tokens;
  r.cached_tokens = s.usage.cached_tokens;
  r.output_tokens = s.usage.completion_tokens;
  r.queue_ms = s.queue_s >= 0 ? s.queue_s * 1e3 : -1;
  r.ttft_ms = s.ttft_s >= 0 ? s.ttft_s * 1e3 : -1;
  r.total_ms = s.total_s >= 0 ? s.total_s * 1e3 : -1;
  r.finish_reason = s.finish_reason;
  r.remote_addr = req.remote;
  r.trace_id = s.trace_id;
  for (const TimedStage& st : s.stages) r.stages.emplace_back(st.name, st.ms);
  access_log_->Write(std::move(r));
}

void OpenAiServer::RecordStages(const TraceContext& trace, int endpoint, const ResponseSummary& s) {
  if (s.stages.empty()) return;
  for (const TimedStage& st : s.stages)
    if (auto it = stage_seconds_.find(st.name); it != stage_seconds_.end())
      it->second->Observe(st.ms / 1e3);
  if (!spans_) return;
  RequestSpan span;
  span.trace = trace;
  span.name = endpoint == 1 ? "POST /v1/completions" : "POST /v1/chat/completions";
  span.total_ms = StagesTotalMs(s.stages);
  // Wall-clock start: now (the answer is just written) minus the total.
  span.start = std::chrono::system_clock::now() -
               std::chrono::duration_cast<std::chrono::system_clock::duration>(
                   std::chrono::duration<double, std::milli>(span.total_ms));
  span.stages = s.stages;
  span.http_status = s.http_status;
  span.attributes = {{"brisk.model", prep_.model_id}, {"brisk.outcome", s.outcome}};
  spans_->Export(std::move(span));
}

}  // namespace brisk
