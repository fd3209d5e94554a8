// The OpenAI-compatible front door: HTTP routes, admission, streaming,
// cancellation on disconnect, deadlines, drain, /metrics, the access log.
//
//   POST /v1/chat/completions, POST /v1/completions   (stream or not, n, stop, ...)
//   POST /v1/responses, GET|DELETE /v1/responses/{id}  (OpenAI's Responses API:
//        server/openai_responses.h, responses_stream.h, response_store.h)
//   POST /tokenize, /detokenize                       (vLLM's shapes: server/token_endpoints.h)
//   GET  /v1/models, /health (alive), /ready (not draining), /metrics,
//        /load (queue depth, running sequences, KV fill: what a gateway routes by)
//
// The request path (README, "The request path"): an HTTP I/O thread parses
// the request and routes it; generation requests are prepared (auth, body,
// limits, chat template, tokens: server/request_preparation.h) on a worker
// strand, submitted through the engine-client seam (engine/engine_client.h),
// and answered by a ResponseStream (server/response_stream.h) on the same
// strand as the engine's outputs arrive. The server knows nothing of models
// or engines beyond that interface and the prompt renderer: any EngineClient
// serves (the in-process engine thread, a remote engine, a test's script).
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "config/inference_config.h"
#include "engine/engine_client.h"
#include "engine/kv_events.h"
#include "grammar/constraint.h"
#include "http/header_gate.h"
#include "http/server.h"
#include "model/prompt_renderer.h"
#include "obs/access_log.h"
#include "obs/metrics.h"
#include "obs/span_exporter.h"
#include "obs/trace_context.h"
#include "server/ignored_fields.h"
#include "server/request_preparation.h"
#include "server/response_store.h"
#include "util/status.h"

namespace brisk {

class ServerMetrics;
struct ResponseSummary;

class OpenAiServer {
 public:
  // Starts listening. `model_id` is what /v1/models lists and what requests
  // must name. `engine` and `renderer` must outlive the server, and the
  // engine must stop calling sinks before the server is destroyed (outputs
  // arriving after Stop() are dropped).
  static Expected<std::unique_ptr<OpenAiServer>> Start(const InferenceConfig& config,
                                                       EngineClient& engine,
                                                       const PromptRenderer& renderer,
                                                       std::string model_id,
                                                       std::unique_ptr<AccessLog> access_log);
  ~OpenAiServer();

  int port() const;
  const std::string& model_id() const { return prep_.model_id; }
  // Graceful drain: /ready turns false and new requests get 503; running
  // ones continue.
  void BeginDrain();
  bool draining() const { return draining_.load(); }
  // Gives responses still in flight a moment to flush, then closes every
  // connection. Cancel the engine's work first (stopping the in-process
  // engine thread does).
  void Stop();
  int64_t active_requests() const { return active_.load(); }
  metrics::Registry& registry() { return registry_; }
  // What /v1/models reports under "brisk" for the served model (its serving
  // key, precision, whether a gate passed for it). Thread-safe.
  void SetServingInfo(nlohmann::ordered_json info);

 private:
  struct Executors;
  // The route table: the header gate (before the body) and the dispatch read it.
  http::RouteTable Routes();
  static HeaderGateConfig GateConfig(const InferenceConfig& config, http::RouteTable routes);
  OpenAiServer(const InferenceConfig& config, EngineClient& engine, const PromptRenderer& renderer,
               std::string model_id, std::unique_ptr<AccessLog> access_log);
  void Health(http::Request&& req, std::shared_ptr<http::Responder> res);
  void Ready(http::Request&& req, std::shared_ptr<http::Responder> res);
  void Metrics(http::Request&& req, std::shared_ptr<http::Responder> res);
  void LoadRoute(http::Request&& req, std::shared_ptr<http::Responder> res);
  void Models(http::Request&& req, std::shared_ptr<http::Responder> res);
  void ChatCompletions(http::Request&& req, std::shared_ptr<http::Responder> res);
  void Completions(http::Request&& req, std::shared_ptr<http::Responder> res);
  // The Responses API (openai_server_responses.cc).
  void Responses(http::Request&& req, std::shared_ptr<http::Responder> res);
  void ResponseById(http::Request&& req, std::shared_ptr<http::Responder> res);
  void RunResponses(const http::Request& req, std::shared_ptr<http::Responder> res,
                    Clock::time_point arrival, const boost::asio::any_io_executor& strand);
  void RunResponseById(const http::Request& req, http::Responder& res);
  void TokenizeRoute(http::Request&& req, std::shared_ptr<http::Responder> res);
  void DetokenizeRoute(http::Request&& req, std::shared_ptr<http::Responder> res);
  // POST /kv/block_hashes/v1/{chat/completions,completions}: the KV event
  // block keys (kvwire/kv_event_wire.h) of the request's prompt, as this
  // engine would publish them (its tenant's salt, its hash seed and block
  // size), so that a gateway can look the prompt up in its index of the
  // fleet's caches without a tokenizer of its own. 404 with KV events off.
  void BlockHashes(int endpoint, http::Request&& req, std::shared_ptr<http::Responder> res);
  void ChatBlockHashes(http::Request&& req, std::shared_ptr<http::Responder> res) {
    BlockHashes(0, std::move(req), std::move(res));
  }
  void CompletionBlockHashes(http::Request&& req, std::shared_ptr<http::Responder> res) {
    BlockHashes(1, std::move(req), std::move(res));
  }
  // /tokenize and /detokenize on a worker strand: key, body, answer.
  void TokenEndpoint(bool tokenize, http::Request&& req, std::shared_ptr<http::Responder> res);
  // The x-brisk-ignored-fields header for skipped keys (none: empty), and
  // their count in the metric.
  http::Headers ReportIgnored(const std::vector<std::string>& fields);
  void Generate(int endpoint, http::Request&& req, std::shared_ptr<http::Responder> res);
  // On the request's strand: prepare, submit, answer.
  void RunGeneration(int endpoint, const http::Request& req, std::shared_ptr<http::Responder> res,
                     Clock::time_point arrival, const boost::asio::any_io_executor& strand);
  void Reject(const api::ApiError& e, const char* outcome, http::Responder& res,
              http::Headers extra = {});
  // A structured-output request: counted, and its unenforced keywords (if
  // any) added to the response headers.
  void NoteConstraint(const PreparedRequest& pr, http::Headers* headers);
  // endpoint: 0 chat completions, 1 completions, 2 responses.
  void LogAccess(const http::Request& req, int endpoint, const std::string& id,
                 const PreparedRequest* prep, const ResponseSummary& summary);
  // A completed request's stages: brisk_request_stage_seconds and, with an
  // OTLP endpoint, its spans.
  void RecordStages(const TraceContext& trace, int endpoint, const ResponseSummary& summary);

  InferenceConfig config_;
  EngineClient& engine_;
  PreparationContext prep_;
  int64_t created_unix_;
  metrics::Registry registry_;
  mutable std::mutex serving_info_mu_;
  nlohmann::ordered_json serving_info_;  // null until set
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<IgnoredFieldCounter> ignored_fields_;
  ConstraintCache constraints_;  // compiled response_format schemas, by content
  std::unique_ptr<ExternalBlockHasher> block_hasher_;  // cache.kv_events on; else null
  std::unique_ptr<AccessLog> access_log_;
  std::map<std::string, metrics::Histogram*> stage_seconds_;  // by stage name
  std::unique_ptr<SpanExporter> spans_;                       // null: no OTLP export
  ResponseStore responses_;  // stored Responses API responses, per tenant
  std::shared_ptr<Executors> executors_;
  http::RouteTable routes_;
  std::unique_ptr<http::Server> http_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> active_{0};
};

}  // namespace brisk
