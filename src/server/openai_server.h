// The OpenAI-compatible front door: HTTP routes, authentication, admission,
// streaming, cancellation on disconnect, deadlines, drain, /metrics.
//
//   POST /v1/chat/completions, POST /v1/completions   (stream or not, n, stop, ...)
//   GET  /v1/models, /health (alive), /ready (model loaded, not draining), /metrics
//
// HTTP threads parse, tokenize and submit to the EngineLoop (never run the
// model); outputs come back on the engine thread and are written through the
// connection's Responder. A client that goes away cancels its generation;
// the KV blocks are free within one engine step.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/engine_loop.h"
#include "model/chat_template.h"
#include "model/llama_model.h"
#include "model/tokenizer.h"
#include "server/config.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "util/status.h"

namespace brisk {

class ServerMetrics;

class OpenAiServer {
 public:
  // Builds the engine from `config` (scheduler, cache, limits) over a loaded
  // model and starts listening. `model_id` is what /v1/models lists and what
  // requests must name.
  static Expected<std::unique_ptr<OpenAiServer>> Start(const InferenceConfig& config,
                                                       LlamaModel& model,
                                                       const Tokenizer& tokenizer,
                                                       std::string model_id, int n_threads);
  ~OpenAiServer();

  int port() const;
  const std::string& model_id() const { return model_id_; }
  // Graceful drain: /ready turns false and new requests get 503; running
  // ones continue.
  void BeginDrain();
  bool draining() const { return draining_.load(); }
  // Waits until no request is in flight or `timeout` passes; true if idle.
  bool WaitIdle(std::chrono::milliseconds timeout) const;
  // Cancels what is left, stops the engine thread and the HTTP server.
  void Stop();
  int64_t active_requests() const { return active_.load(); }

 private:
  struct RequestCtx;
  OpenAiServer(const InferenceConfig& config, LlamaModel& model, const Tokenizer& tokenizer,
               std::string model_id, const EngineOptions& engine_options);
  void Handle(http::Request&& req, std::shared_ptr<http::Responder> res);
  void HandleGeneration(int endpoint, http::Request&& req, std::shared_ptr<http::Responder> res);
  void OnOutput(const std::shared_ptr<RequestCtx>& ctx, int prompt_index, const SequenceOutput& out,
                const Status& error);
  void FinishRequest(RequestCtx& ctx);

  InferenceConfig config_;
  LlamaModel& model_;
  const Tokenizer& tokenizer_;
  std::string model_id_;
  std::unique_ptr<ChatTemplate> template_;
  std::string bos_text_, eos_text_;
  int64_t created_unix_;
  metrics::Registry registry_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<EngineLoop> loop_;
  std::unique_ptr<http::Server> http_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> active_{0};
};

}  // namespace brisk
