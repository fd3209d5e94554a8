#include "server/openai_server.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>

#include "server/openai_api.h"

namespace brisk {
namespace {

using http::Headers;
using Clock = std::chrono::steady_clock;

const Headers kJson = {{"Content-Type", "application/json"}};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

api::ApiError Error(int status, std::string type, std::string message, std::string code = "",
                    std::string param = "") {
  api::ApiError e;
  e.http_status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.code = std::move(code);
  e.param = std::move(param);
  return e;
}

// 429 for a full queue, with the Retry-After the engine loop estimates.
api::ApiError QueueFull(const Status& st, double retry_s, http::Headers* extra) {
  extra->emplace_back("Retry-After", fmt::format("{}", static_cast<int>(retry_s)));
  return Error(429, "rate_limit_error",
               fmt::format("Server busy: {}. Retry after {} s.", st.message(), retry_s),
               "queue_full");
}

std::string_view FinishName(FinishReason r) {
  return r == FinishReason::kLength ? "length" : "stop";
}

}  // namespace

// Every series the server exports. Names follow vLLM's (vllm:X -> brisk:X)
// so a vLLM dashboard ports by renaming the prefix; docs/metrics.md maps them.
class ServerMetrics {
 public:
  explicit ServerMetrics(metrics::Registry& r) {
    const auto lat = metrics::LatencyBucketsSeconds();
    const auto tok = metrics::TokenLatencyBucketsSeconds();
    ttft = r.GetHistogram("brisk:time_to_first_token_seconds",
                          "Time to first token: arrival to the first generated token.", lat);
    tpot = r.GetHistogram("brisk:time_per_output_token_seconds",
                          "Per request: (e2e - ttft) / (generated tokens - 1).", tok);
    itl = r.GetHistogram("brisk:inter_token_latency_seconds",
                         "Time between consecutive token outputs of a sample.", tok);
    e2e = r.GetHistogram("brisk:e2e_request_latency_seconds",
                         "Arrival to the last token (finished requests).", lat);
    queue = r.GetHistogram("brisk:request_queue_time_seconds",
                           "Arrival to first scheduled by the engine.", lat);
    prefill = r.GetHistogram("brisk:request_prefill_time_seconds",
                             "First scheduled to first token.", lat);
    decode = r.GetHistogram("brisk:request_decode_time_seconds", "First token to last token.", lat);
    step = r.GetHistogram("brisk:engine_step_seconds", "Duration of one engine forward step.", tok);
    step_tokens_prefill = r.GetCounter("brisk:scheduled_prefill_tokens_total",
                                       "Prompt tokens computed by engine steps.");
    step_tokens_decode = r.GetCounter("brisk:scheduled_decode_tokens_total",
                                      "Decode tokens computed by engine steps.");
    step_time_prefill = r.GetCounter("brisk:engine_step_prefill_seconds_total",
                                     "Step time attributed to prefill tokens (by token share).");
    step_time_decode = r.GetCounter("brisk:engine_step_decode_seconds_total",
                                    "Step time attributed to decode tokens (by token share).");
    prompt_tokens =
        r.GetCounter("brisk:prompt_tokens_total", "Prompt tokens of finished requests.");
    cached_tokens = r.GetCounter("brisk:prompt_tokens_cached_total",
                                 "Prompt tokens served from the prefix cache.");
    generation_tokens =
        r.GetCounter("brisk:generation_tokens_total", "Generated tokens of finished requests.");
    for (const char* o : {"ok", "cancelled", "rejected", "timeout", "error", "invalid"})
      outcome[o] = r.GetCounter("brisk:requests_total",
                                "Requests by outcome: ok, cancelled (client went away), rejected "
                                "(429), timeout (deadline), error (5xx), invalid (4xx).",
                                {{"outcome", o}});
  }
  metrics::Histogram *ttft, *tpot, *itl, *e2e, *queue, *prefill, *decode, *step;
  metrics::Counter *step_tokens_prefill, *step_tokens_decode, *step_time_prefill, *step_time_decode;
  metrics::Counter *prompt_tokens, *cached_tokens, *generation_tokens;
  std::map<std::string, metrics::Counter*> outcome;
};

struct OpenAiServer::RequestCtx {
  api::Endpoint ep = api::Endpoint::kChatCompletions;
  std::string id;
  int64_t created = 0;
  bool stream = false;
  bool include_usage = false;
  int n = 1;
  Priority priority = Priority::kInteractive;
  std::shared_ptr<http::Responder> res;
  Clock::time_point t_arrival;

  std::mutex mu;  // the rest: outputs arrive on the engine thread, closes on an IO thread
  std::vector<int64_t> tickets;
  bool started = false;  // stream headers sent
  bool done = false;
  int remaining = 0;  // choices not finished
  std::vector<api::Choice> choices;
  std::vector<uint8_t> role_sent;
  std::vector<Clock::time_point> last_token_at;
  std::optional<Clock::time_point> t_first;
  Clock::time_point t_last;
  api::Usage usage;
  double queue_s = -1;
};

OpenAiServer::OpenAiServer(const InferenceConfig& config, LlamaModel& model,
                           const Tokenizer& tokenizer, std::string model_id,
                           const EngineOptions& engine_options)
    : config_(config),
      model_(model),
      tokenizer_(tokenizer),
      model_id_(std::move(model_id)),
      created_unix_(std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count()),
      metrics_(std::make_unique<ServerMetrics>(registry_)) {
  engine_ = std::make_unique<Engine>(model, tokenizer, engine_options);
  ServerMetrics* m = metrics_.get();
  loop_ = std::make_unique<EngineLoop>(*engine_, [m](const StepStats& s, const SchedulerStats&) {
    if (s.sequences == 0) return;
    m->step->Observe(s.forward_s);
    m->step_tokens_prefill->Inc(s.prefill_tokens);
    m->step_tokens_decode->Inc(s.decode_tokens);
    const double total = s.prefill_tokens + s.decode_tokens;
    if (total > 0) {
      m->step_time_prefill->Inc(s.forward_s * s.prefill_tokens / total);
      m->step_time_decode->Inc(s.forward_s * s.decode_tokens / total);
    }
  });
  EngineLoop* loop = loop_.get();
  for (int p = 0; p < kNumPriorities; ++p) {
    const metrics::Labels l = {{"priority", PriorityName(static_cast<Priority>(p))}};
    registry_.AddCallbackGauge("brisk:num_requests_running", "Sequences running in the engine.", l,
                               [loop, p] { return loop->stats().scheduler.running[p]; });
    registry_.AddCallbackGauge("brisk:num_requests_waiting",
                               "Sequences admitted and waiting to be scheduled.", l,
                               [loop, p] { return loop->stats().queued[p]; });
  }
  registry_.AddCallbackGauge("brisk:kv_cache_usage_perc", "KV cache blocks in use (0..1).", {},
                             [loop] {
                               auto s = loop->stats().scheduler;
                               return s.blocks_total ? double(s.blocks_used) / s.blocks_total : 0;
                             });
  for (const char* state : {"used", "free", "cached"}) {
    std::string st = state;
    registry_.AddCallbackGauge("brisk:kv_cache_blocks", "KV cache blocks by state.",
                               {{"state", state}}, [loop, st] {
                                 auto s = loop->stats().scheduler;
                                 if (st == "used") return double(s.blocks_used);
                                 if (st == "free") return double(s.blocks_total - s.blocks_used);
                                 return double(s.blocks_cached);
                               });
  }
  registry_.AddCallbackGauge("brisk:num_preemptions_total",
                             "Sequences preempted (KV blocks taken back, recomputed).", {},
                             [loop] { return double(loop->stats().scheduler.preemptions); });
  registry_.AddCallbackGauge(
      "brisk:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", {},
      [loop] { return double(loop->stats().scheduler.prefix_query_tokens); });
  registry_.AddCallbackGauge("brisk:prefix_cache_hits_total",
                             "Prompt tokens found in the prefix cache.", {},
                             [loop] { return double(loop->stats().scheduler.prefix_hit_tokens); });
  registry_.AddCallbackGauge("brisk:kv_cache_waste_ratio",
                             "Allocated KV token slots not holding a token, mean over steps.", {},
                             [loop] { return loop->stats().scheduler.kv_waste_ratio; });
  registry_.AddCallbackGauge("brisk:request_drain_rate",
                             "Requests finished per second over the last 30 s.", {},
                             [loop] { return loop->stats().finished_per_s; });
  std::atomic<int64_t>* active = &active_;
  registry_.AddCallbackGauge("brisk:http_requests_in_flight", "Generation requests being served.",
                             {}, [active] { return double(active->load()); });
}

OpenAiServer::~OpenAiServer() { Stop(); }

Expected<std::unique_ptr<OpenAiServer>> OpenAiServer::Start(const InferenceConfig& config,
                                                            LlamaModel& model,
                                                            const Tokenizer& tokenizer,
                                                            std::string model_id, int n_threads) {
  if (!config.cache.kv_cache)
    return InvalidArgument(
        "cache.kv_cache: false is not supported: the engine always keeps a paged KV cache");
  if (config.model.precision != "native")
    return Unimplemented(
        "model.precision: {} is not supported yet; supported: native (the file's own tensor "
        "types: F32/F16/BF16/Q8_0/Q4_0/Q4_1/Q4_K/Q6_K)",
        config.model.precision);
  if (config.model.max_context_tokens > model.config().context_length)
    return InvalidArgument("model.max_context_tokens {} exceeds the model's context length {}",
                           config.model.max_context_tokens, model.config().context_length);
  EngineOptions eo;
  eo.n_threads = n_threads;
  eo.block_size = config.cache.block_size;
  eo.kv_budget_bytes = config.scheduler.kv_cache_bytes;
  eo.max_batch_tokens = config.scheduler.max_batch_tokens;
  eo.max_concurrent_sequences = config.scheduler.max_concurrent_sequences;
  eo.prefill_chunk_tokens = config.scheduler.prefill_chunk_tokens;
  eo.continuous_batching = config.scheduler.continuous_batching;
  eo.prefix_cache = config.cache.prefix_cache;
  eo.aging_s = config.scheduler.aging_seconds;
  eo.max_waiting[0] = config.limits.max_queue_interactive;
  eo.max_waiting[1] = config.limits.max_queue_batch;
  eo.max_context_tokens = config.model.max_context_tokens;
  eo.prefault_kv = true;  // first requests do not pay the KV pool's page faults

  std::unique_ptr<OpenAiServer> s(new OpenAiServer(config, model, tokenizer, model_id, eo));
  if (auto src = model.file().GetString("tokenizer.chat_template"); src.ok()) {
    auto t = ChatTemplate::Parse(*src);
    if (!t.ok()) return t.status().WithContext("parsing the model's chat template");
    s->template_ = std::make_unique<ChatTemplate>(std::move(*t));
  }
  if (auto b = tokenizer.bos_id()) s->bos_text_ = tokenizer.TokenText(*b);
  if (auto e = tokenizer.eos_id()) s->eos_text_ = tokenizer.TokenText(*e);

  http::ServerOptions ho;
  ho.host = config.server.host;
  ho.port = config.server.port;
  ho.io_threads = config.server.http_threads;
  ho.max_body_bytes = static_cast<size_t>(config.server.max_body_bytes);
  ho.request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.server.request_timeout_s * 1000));
  ho.idle_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.server.idle_timeout_s * 1000));
  ho.max_connections = config.server.max_connections;
  OpenAiServer* self = s.get();
  auto http =
      http::Server::Start(ho, [self](http::Request&& req, std::shared_ptr<http::Responder> res) {
        self->Handle(std::move(req), std::move(res));
      });
  if (!http.ok()) return http.status();
  s->http_ = std::move(*http);
  return s;
}

int OpenAiServer::port() const { return http_ ? http_->port() : 0; }

void OpenAiServer::BeginDrain() { draining_.store(true); }

bool OpenAiServer::WaitIdle(std::chrono::milliseconds timeout) const {
  const auto until = Clock::now() + timeout;
  while (active_.load() > 0) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void OpenAiServer::Stop() {
  draining_.store(true);
  // The engine thread cancels what is left; those responses (an error event
  // and [DONE] for streams, 503 otherwise) get a moment to flush before the
  // connections close.
  if (loop_) loop_->Stop();
  if (http_) {
    const auto until = Clock::now() + std::chrono::milliseconds(500);
    while (active_.load() > 0 && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    http_->Stop();
  }
}

static void SendError(http::Responder& res, const api::ApiError& e, Headers extra = {}) {
  Headers h = kJson;
  h.insert(h.end(), extra.begin(), extra.end());
  res.Send(e.http_status, std::move(h), api::ErrorBody(e));
}

void OpenAiServer::Handle(http::Request&& req, std::shared_ptr<http::Responder> res) {
  const std::string& path = req.path;
  if (path == "/health") {
    if (req.method != "GET" && req.method != "HEAD") goto method;
    res->Send(200, kJson, R"({"status":"ok"})");
    return;
  }
  if (path == "/ready") {
    if (req.method != "GET" && req.method != "HEAD") goto method;
    if (draining_.load())
      res->Send(503, kJson, R"({"status":"draining"})");
    else
      res->Send(200, kJson, R"({"status":"ready"})");
    return;
  }
  if (path == "/metrics") {
    if (req.method != "GET") goto method;
    res->Send(200, {{"Content-Type", std::string(metrics::kContentType)}}, registry_.Render());
    return;
  }
  if (path == "/v1/models") {
    if (req.method != "GET") goto method;
    res->Send(200, kJson, api::ModelsBody({model_id_}, created_unix_));
    return;
  }
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    if (req.method != "POST") goto method;
    HandleGeneration(path == "/v1/completions" ? 1 : 0, std::move(req), std::move(res));
    return;
  }
  SendError(*res, Error(404, "invalid_request_error",
                        "Unknown path " + path +
                            " (see /v1/models, /v1/chat/completions, "
                            "/v1/completions, /health, /ready, /metrics)",
                        "not_found"));
  return;
method:
  SendError(*res, Error(405, "invalid_request_error",
                        "Method " + req.method + " not allowed on " + path, "method_not_allowed"));
}

void OpenAiServer::HandleGeneration(int endpoint, http::Request&& req,
                                    std::shared_ptr<http::Responder> res) {
  const auto t_arrival = Clock::now();
  const auto ep = endpoint == 1 ? api::Endpoint::kCompletions : api::Endpoint::kChatCompletions;
  auto reject = [&](const api::ApiError& e, const char* outcome, Headers extra = {}) {
    metrics_->outcome[outcome]->Inc();
    SendError(*res, e, std::move(extra));
  };
  if (draining_.load())
    return reject(Error(503, "server_error", "The server is shutting down", "draining"), "error");

  // Authentication: a key maps to a tenant (prefix-cache isolation) and a feature tag.
  std::string tenant;
  if (!config_.keys.empty()) {
    std::string_view auth = req.Header("Authorization");
    const ApiKeyConfig* key = nullptr;
    if (auth.size() > 7 && (auth.substr(0, 7) == "Bearer " || auth.substr(0, 7) == "bearer ")) {
      std::string_view token = auth.substr(7);
      for (const auto& k : config_.keys)
        if (k.key == token) key = &k;
    }
    if (!key)
      return reject(Error(401, "invalid_request_error",
                          auth.empty() ? "Missing API key: send Authorization: Bearer <key>"
                                       : "Incorrect API key provided",
                          "invalid_api_key"),
                    "invalid");
    tenant = key->tenant;
  }

  auto parsed = api::ParseRequest(ep, req.body);
  if (auto* e = std::get_if<api::ApiError>(&parsed)) return reject(*e, "invalid");
  api::ApiRequest& ar = std::get<api::ApiRequest>(parsed);
  if (ar.model != model_id_)
    return reject(
        Error(404, "invalid_request_error",
              "The model '" + ar.model + "' does not exist; this server serves '" + model_id_ + "'",
              "model_not_found", "model"),
        "invalid");
  if (ar.stream && !config_.response.streaming)
    return reject(Error(400, "invalid_request_error", "Streaming is disabled on this server",
                        "unsupported", "stream"),
                  "invalid");
  if (ar.n > config_.limits.max_n)
    return reject(
        Error(400, "invalid_request_error",
              fmt::format("n = {} is over this server's limit of {}", ar.n, config_.limits.max_n),
              "invalid_value", "n"),
        "invalid");
  if (static_cast<int>(ar.stop.size()) > config_.limits.max_stop_strings)
    return reject(
        Error(400, "invalid_request_error",
              fmt::format("At most {} stop strings are allowed", config_.limits.max_stop_strings),
              "invalid_value", "stop"),
        "invalid");
  if (ar.max_tokens && *ar.max_tokens > config_.limits.max_tokens)
    return reject(Error(400, "invalid_request_error",
                        fmt::format("max_tokens = {} is over this server's limit of {}",
                                    *ar.max_tokens, config_.limits.max_tokens),
                        "invalid_value", "max_tokens"),
                  "invalid");

  Priority priority = Priority::kInteractive;
  if (ar.priority) {
    priority = *ar.priority == api::Priority::kBatch ? Priority::kBatch : Priority::kInteractive;
  } else if (auto h = req.Header("X-Priority"); !h.empty()) {
    auto p = api::ParsePriority(h);
    if (!p.ok())
      return reject(Error(400, "invalid_request_error",
                          "X-Priority must be 'interactive' or 'batch'", "invalid_value"),
                    "invalid");
    priority = *p == api::Priority::kBatch ? Priority::kBatch : Priority::kInteractive;
  }
  double timeout_s = config_.limits.default_timeout_s;
  if (ar.timeout_s) {
    timeout_s = *ar.timeout_s;
  } else if (auto h = req.Header("X-Request-Timeout"); !h.empty()) {
    char* end = nullptr;
    std::string hv(h);
    const double v = std::strtod(hv.c_str(), &end);
    if (end == hv.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0)
      return reject(
          Error(400, "invalid_request_error",
                "X-Request-Timeout must be a positive number of seconds", "invalid_value"),
          "invalid");
    timeout_s = v;
  }
  timeout_s = std::min(timeout_s, config_.limits.max_timeout_s);

  // Prompts -> tokens.
  std::vector<std::vector<int32_t>> prompts;
  if (ep == api::Endpoint::kChatCompletions) {
    if (!template_)
      return reject(Error(400, "invalid_request_error",
                          "This model has no chat template; use /v1/completions", "unsupported"),
                    "invalid");
    nlohmann::ordered_json ctx = {{"messages", ar.messages},
                                  {"add_generation_prompt", true},
                                  {"bos_token", bos_text_},
                                  {"eos_token", eos_text_}};
    auto text = template_->RenderJson(ctx);
    if (!text.ok())
      return reject(Error(400, "invalid_request_error",
                          "The chat template rejected the messages: " + text.status().message(),
                          "invalid_value", "messages"),
                    "invalid");
    prompts.push_back(tokenizer_.Encode(*text, /*add_special=*/true, /*parse_special=*/true));
  } else {
    for (const auto& p : ar.prompts)
      prompts.push_back(tokenizer_.Encode(p, /*add_special=*/true, /*parse_special=*/true));
    for (auto& p : ar.prompt_tokens) {
      for (int32_t t : p)
        if (t < 0 || t >= model_.config().vocab)
          return reject(Error(400, "invalid_request_error",
                              fmt::format("Token id {} is outside the vocabulary (0..{})", t,
                                          model_.config().vocab - 1),
                              "invalid_value", "prompt"),
                        "invalid");
      prompts.push_back(std::move(p));
    }
  }
  const int64_t ctx_len = engine_->context_limit();
  int max_tokens = 0;
  for (const auto& p : prompts) {
    const int64_t n_prompt = static_cast<int64_t>(p.size());
    if (n_prompt == 0)
      return reject(
          Error(400, "invalid_request_error", "The prompt is empty", "invalid_value", "prompt"),
          "invalid");
    const int64_t room = ctx_len - n_prompt;
    const int64_t want =
        ar.max_tokens ? *ar.max_tokens : std::min<int64_t>(config_.limits.default_max_tokens, room);
    if (room < 1 || n_prompt + want > ctx_len)
      return reject(
          Error(400, "invalid_request_error",
                fmt::format("This model's maximum context length is {} tokens. However, you "
                            "requested {} tokens ({} in the prompt, {} for the completion). "
                            "Please reduce the prompt or max_tokens.",
                            ctx_len, n_prompt + std::max<int64_t>(want, 1), n_prompt,
                            std::max<int64_t>(want, 1)),
                "context_length_exceeded",
                ar.max_tokens ? "max_tokens"
                              : (ep == api::Endpoint::kCompletions ? "prompt" : "messages")),
          "invalid");
    max_tokens = std::max(max_tokens, static_cast<int>(want));
  }

  auto ctx = std::make_shared<RequestCtx>();
  ctx->ep = ep;
  ctx->id = api::NewRequestId(ep);
  ctx->created = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  ctx->stream = ar.stream;
  ctx->include_usage = ar.include_usage;
  ctx->n = ar.n;
  ctx->priority = priority;
  ctx->res = res;
  ctx->t_arrival = t_arrival;
  const int n_choices = static_cast<int>(prompts.size()) * ar.n;
  ctx->remaining = n_choices;
  ctx->choices.resize(n_choices);
  for (int i = 0; i < n_choices; ++i) ctx->choices[i].index = i;
  ctx->role_sent.assign(n_choices, 0);
  ctx->last_token_at.assign(n_choices, {});

  ++active_;
  const std::string salt = config_.cache.share_prefix_across_tenants ? "" : tenant;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest g;
    const int64_t n_prompt = static_cast<int64_t>(prompts[i].size());
    g.prompt = std::move(prompts[i]);
    g.sampling = ar.sampling;
    g.max_tokens = ar.max_tokens ? *ar.max_tokens
                                 : static_cast<int>(std::min<int64_t>(
                                       config_.limits.default_max_tokens, ctx_len - n_prompt));
    g.n = ar.n;
    g.stop = ar.stop;
    g.ignore_eos = ar.ignore_eos;
    g.priority = priority;
    g.arrival = t_arrival;
    g.deadline = t_arrival + std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
    g.cache_salt = salt;
    const int prompt_index = static_cast<int>(i);
    auto ticket = loop_->Submit(
        std::move(g), [this, ctx, prompt_index](const SequenceOutput& out, const Status& error) {
          OnOutput(ctx, prompt_index, out, error);
        });
    if (!ticket.ok()) {
      std::lock_guard<std::mutex> lock(ctx->mu);
      for (int64_t t : ctx->tickets) loop_->Cancel(t);
      ctx->done = true;
      --active_;
      const Status& st = ticket.status();
      if (st.code() == StatusCode::kResourceExhausted) {
        Headers extra;
        const api::ApiError e = QueueFull(st, loop_->RetryAfterSeconds(priority), &extra);
        return reject(e, "rejected", std::move(extra));
      }
      if (st.code() == StatusCode::kUnavailable)
        return reject(Error(503, "server_error", st.message(), "draining"), "error");
      return reject(Error(400, "invalid_request_error", st.message(), "invalid_value"), "invalid");
    }
    std::lock_guard<std::mutex> lock(ctx->mu);
    ctx->tickets.push_back(*ticket);
  }

  if (config_.response.cancel_on_disconnect) {
    std::weak_ptr<RequestCtx> weak = ctx;
    res->OnClose([this, weak] {
      auto c = weak.lock();
      if (!c) return;
      std::lock_guard<std::mutex> lock(c->mu);
      if (c->done) return;
      for (int64_t t : c->tickets) loop_->Cancel(t);
    });
  }
}

// Runs on the engine thread.
void OpenAiServer::OnOutput(const std::shared_ptr<RequestCtx>& ctx_ptr, int prompt_index,
                            const SequenceOutput& out, const Status& error) {
  RequestCtx& ctx = *ctx_ptr;
  std::lock_guard<std::mutex> lock(ctx.mu);
  if (ctx.done) return;
  const auto now = Clock::now();
  const int index = prompt_index * ctx.n + out.index;
  if (index < 0 || index >= static_cast<int>(ctx.choices.size())) return;
  http::Responder& res = *ctx.res;

  // Abnormal ends finish the whole request at once.
  if (!error.ok() || out.reason == FinishReason::kError || out.reason == FinishReason::kCancelled ||
      out.reason == FinishReason::kDeadline) {
    ctx.done = true;
    for (int64_t t : ctx.tickets) loop_->Cancel(t);
    --active_;
    const char* outcome = "error";
    api::ApiError e = Error(500, "server_error", error.ok() ? "generation failed" : error.message(),
                            "internal_error");
    if (error.code() == StatusCode::kResourceExhausted) {
      outcome = "rejected";
      if (!res.closed() && !ctx.started) {
        Headers extra;
        SendError(res, QueueFull(error, loop_->RetryAfterSeconds(ctx.priority), &extra),
                  std::move(extra));
        metrics_->outcome[outcome]->Inc();
        return;
      }
    } else if (out.reason == FinishReason::kCancelled) {
      outcome = res.closed() ? "cancelled" : "error";
      e = Error(503, "server_error", "The request was cancelled (server shutting down)",
                "cancelled");
    } else if (out.reason == FinishReason::kDeadline) {
      outcome = "timeout";
      e = Error(504, "timeout", "The request's deadline passed before it finished",
                "deadline_exceeded");
    }
    metrics_->outcome[outcome]->Inc();
    if (res.closed()) return;
    if (ctx.started) {
      res.Write(api::SseError(e));
      res.Write(std::string(api::kSseDone));
      res.End();
    } else {
      SendError(res, e);
    }
    return;
  }

  if (!out.new_tokens.empty()) {
    if (!ctx.t_first) {
      ctx.t_first = now;
      metrics_->ttft->Observe(Seconds(now - ctx.t_arrival));
    }
    if (ctx.last_token_at[index] != Clock::time_point{})
      metrics_->itl->Observe(Seconds(now - ctx.last_token_at[index]));
    ctx.last_token_at[index] = now;
    ctx.t_last = now;
  }
  api::Choice& ch = ctx.choices[index];
  if (ctx.stream) {
    if (!ctx.started) {
      res.StartStream(200, {{"Content-Type", "text/event-stream"}, {"X-Request-Id", ctx.id}});
      ctx.started = true;
    }
    const bool first = !ctx.role_sent[index];
    if (first && ctx.ep == api::Endpoint::kChatCompletions) {
      ctx.role_sent[index] = 1;
      res.Write(api::SseChunk(ctx.ep, ctx.id, model_id_, ctx.created, index, "assistant", out.text,
                              std::nullopt));
    } else if (!out.text.empty()) {
      res.Write(api::SseChunk(ctx.ep, ctx.id, model_id_, ctx.created, index, std::nullopt, out.text,
                              std::nullopt));
    }
    if (out.finished)
      res.Write(api::SseChunk(ctx.ep, ctx.id, model_id_, ctx.created, index, std::nullopt, "",
                              FinishName(out.reason)));
  } else {
    ch.text += out.text;
  }
  if (!out.finished) return;

  ch.finish_reason = std::string(FinishName(out.reason));
  ctx.usage.completion_tokens += out.completion_tokens;
  if (out.index == 0) {
    ctx.usage.prompt_tokens += out.prompt_tokens;
    ctx.usage.cached_tokens += out.cached_tokens;
    if (prompt_index == 0) ctx.queue_s = out.queue_s;
  }
  if (--ctx.remaining > 0) return;
  FinishRequest(ctx);
}

void OpenAiServer::FinishRequest(RequestCtx& ctx) {
  ctx.done = true;
  --active_;
  const auto now = Clock::now();
  const double e2e = Seconds(now - ctx.t_arrival);
  ServerMetrics& m = *metrics_;
  m.outcome["ok"]->Inc();
  m.e2e->Observe(e2e);
  m.prompt_tokens->Inc(double(ctx.usage.prompt_tokens));
  m.cached_tokens->Inc(double(ctx.usage.cached_tokens));
  m.generation_tokens->Inc(double(ctx.usage.completion_tokens));
  if (ctx.queue_s >= 0) m.queue->Observe(ctx.queue_s);
  if (ctx.t_first) {
    const double ttft = Seconds(*ctx.t_first - ctx.t_arrival);
    if (ctx.queue_s >= 0) m.prefill->Observe(std::max(0.0, ttft - ctx.queue_s));
    m.decode->Observe(Seconds(ctx.t_last - *ctx.t_first));
    const int64_t per_choice =
        ctx.usage.completion_tokens / std::max<int64_t>(1, ctx.choices.size());
    if (per_choice > 1) m.tpot->Observe((e2e - ttft) / double(per_choice - 1));
  }
  http::Responder& res = *ctx.res;
  if (res.closed()) return;
  if (ctx.stream) {
    if (!ctx.started) {
      res.StartStream(200, {{"Content-Type", "text/event-stream"}, {"X-Request-Id", ctx.id}});
      ctx.started = true;
    }
    if (ctx.include_usage)
      res.Write(api::SseUsageChunk(ctx.ep, ctx.id, model_id_, ctx.created, ctx.usage));
    res.Write(std::string(api::kSseDone));
    res.End();
  } else {
    res.Send(200, {{"Content-Type", "application/json"}, {"X-Request-Id", ctx.id}},
             api::CompletionBody(ctx.ep, ctx.id, model_id_, ctx.created, ctx.choices, ctx.usage));
  }
}

}  // namespace brisk
