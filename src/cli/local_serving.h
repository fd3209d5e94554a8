// `brisk serve` in one process: the engine thread (the in-process
// EngineClient) and the OpenAI front door over one loaded model.
#pragma once

#include <memory>
#include <string>

#include "config/inference_config.h"
#include "engine/engine.h"
#include "engine/engine_loop.h"
#include "model/model.h"
#include "model/prompt_renderer.h"
#include "model/tokenizer.h"
#include "server/openai_server.h"
#include "util/status.h"

namespace brisk {

// The engine options an inference.yaml profile asks for.
EngineOptions EngineOptionsFromConfig(const InferenceConfig& config, int n_threads);

// model.rope_scaling, rope_scaling_factor and rope_original_context as load
// options (for the served model and its draft alike): "file" leaves the
// file's own scaling. Error: linear or yarn with neither a factor nor
// max_context_tokens to derive one from.
Status SetRopeScaling(const InferenceConfig::Model& m, LoadOptions* options);

// The KV disk tier's serving key (EngineOptions::kv_disk): the model file's
// hash, the weight and KV precisions, the RoPE scaling as applied and the
// engine version (ServingKey::Id, cli/serving_gate.h).
std::string KvDiskServingKey(const InferenceConfig& config, const Model& model);

class LocalServing {
 public:
  // Checks what the engine cannot do (InvalidArgument / Unimplemented with a
  // message naming the key), builds the engine, starts its thread and the
  // server. `model` and `tokenizer` must outlive the result. With
  // speculative.method: draft it loads the draft model (at its own
  // precision) and checks that its vocabulary is the model's.
  static Expected<std::unique_ptr<LocalServing>> Start(const InferenceConfig& config, Model& model,
                                                       const Tokenizer& tokenizer,
                                                       std::string model_id, int n_threads);
  ~LocalServing();  // Stop()

  OpenAiServer& server() { return *server_; }
  Engine& engine() { return *engine_; }
  // Cancels what is left (503 / an error event to each client), then stops
  // the engine thread and the server. Idempotent.
  void Stop();

 private:
  LocalServing() = default;
  std::unique_ptr<Model> draft_model_;  // speculative.method: draft
  std::unique_ptr<PromptRenderer> renderer_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<KvEventPublisher> kv_events_;  // cache.kv_events; outlives loop_
  std::unique_ptr<EngineLoop> loop_;
  std::unique_ptr<OpenAiServer> server_;
};

}  // namespace brisk
