#include "cli/local_serving.h"

#include "cli/serving_gate.h"
#include "config/config_yaml.h"

namespace brisk {

EngineOptions EngineOptionsFromConfig(const InferenceConfig& config, int n_threads) {
  EngineOptions eo;
  eo.n_threads = n_threads;
  eo.scheduler = config.scheduler;  // the SchedulerOptions part
  eo.kv_budget_bytes = config.scheduler.kv_cache_bytes;
  const auto kv_type = ParseKvPrecision(config.cache.kv_precision);  // Start() checked it
  eo.kv_type = kv_type.ok() ? *kv_type : KvType::kF16;
  using Overlap = EngineOptions::MaskOverlap;
  const std::string& mo = config.scheduler.grammar_mask_overlap;
  eo.mask_overlap = mo == "on" ? Overlap::kOn : mo == "off" ? Overlap::kOff : Overlap::kAuto;
  eo.max_context_tokens = config.model.max_context_tokens;
  eo.prefault_kv = true;  // first requests do not pay the KV pool's page faults
  const auto& sp = config.speculative;
  eo.speculative.method = sp.method == "ngram"   ? SpeculativeOptions::Method::kNgram
                          : sp.method == "draft" ? SpeculativeOptions::Method::kDraftModel
                                                 : SpeculativeOptions::Method::kNone;
  eo.speculative.num_tokens = sp.num_tokens;
  eo.speculative.ngram_min = sp.ngram_min;
  eo.speculative.ngram_max = sp.ngram_max;
  eo.speculative.max_batch = sp.max_batch;
  eo.speculative.min_gain = 1.0 + sp.min_gain_percent / 100.0;
  eo.speculative.adaptive = sp.adaptive;
  eo.kv_events = config.cache.kv_events.enabled;
  eo.kv_events_hash_seed = config.cache.kv_events.hash_seed;
  eo.kv_disk.dir = config.cache.disk_path;
  eo.kv_disk.capacity_bytes = config.cache.disk_bytes;
  return eo;
}

Status SetRopeScaling(const InferenceConfig::Model& m, LoadOptions* options) {
  // Again here: brisk serve's flags set these keys after the file's check.
  RETURN_IF_ERROR(CheckRopeScalingKeys(m));
  if (m.rope_scaling == "file") return Status::Ok();
  RopeScaling s;
  ASSIGN_OR_RETURN(s.type, ParseRopeScalingType(m.rope_scaling));
  s.factor = m.rope_scaling_factor;
  s.original_context = m.rope_original_context;
  options->rope_scaling = s;
  options->context_tokens = m.max_context_tokens;
  return Status::Ok();
}

std::string KvDiskServingKey(const InferenceConfig& config, const Model& model) {
  ServingKey key;
  key.model_hash = ModelFileHash(model.file().bytes());
  key.precision = config.model.precision;
  key.kv_precision = config.cache.kv_precision;
  key.rope =
      config.model.rope_scaling == "file" ? "file" : RopeScalingKey(model.config().rope_scaling);
  return key.Id();
}

Expected<std::unique_ptr<LocalServing>> LocalServing::Start(const InferenceConfig& config,
                                                            Model& model,
                                                            const Tokenizer& tokenizer,
                                                            std::string model_id, int n_threads) {
  if (!config.cache.kv_cache)
    return InvalidArgument(
        "cache.kv_cache: false is not supported: the engine always keeps a paged KV cache");
  if (auto kv_type = ParseKvPrecision(config.cache.kv_precision); !kv_type.ok())
    return kv_type.status().WithContext("cache.kv_precision");
  if (config.model.max_context_tokens > model.config().context_length)
    return InvalidArgument(
        "model.max_context_tokens {} exceeds the model's context length {}{}",
        config.model.max_context_tokens, model.config().context_length,
        config.model.rope_scaling == "file" || config.model.rope_scaling == "none"
            ? " (model.rope_scaling: yarn or linear extends it)"
            : "");
  auto access_log = AccessLog::Create(config.logging.access_log, config.logging.access_log_path);
  if (!access_log.ok()) return access_log.status().WithContext("logging.access_log_path");

  std::unique_ptr<LocalServing> s(new LocalServing());
  const std::string& template_path = config.model.chat_template;
  auto renderer = [&]() -> Expected<std::unique_ptr<PromptRenderer>> {
    if (template_path.empty()) return PromptRenderer::FromGguf(model.file(), tokenizer);
    // Missing files, directories and oversize files are refused by name.
    auto text = config_yaml::ReadConfigFile(template_path);
    if (!text.ok()) return text.status().WithContext("model.chat_template");
    auto r = PromptRenderer::FromTemplateText(*text, template_path, tokenizer);
    if (!r.ok()) return r.status().WithContext("model.chat_template");
    return r;
  }();
  if (!renderer.ok()) return renderer.status();
  s->renderer_ = std::move(*renderer);
  EngineOptions eo = EngineOptionsFromConfig(config, n_threads);
  if (eo.speculative.method == SpeculativeOptions::Method::kDraftModel) {
    const std::string& path = config.speculative.draft_model;
    LoadOptions draft_options;
    RETURN_IF_ERROR(SetRopeScaling(config.model, &draft_options));
    auto draft = Model::Load(path, draft_options);
    if (!draft.ok()) return draft.status().WithContext("speculative.draft_model: loading " + path);
    if (Status st = CheckDraftVocab(model, **draft); !st.ok())
      return st.WithContext("speculative.draft_model " + path);
    s->draft_model_ = std::move(*draft);
    eo.speculative.draft_model = s->draft_model_.get();
  }
  if (Status st = eo.speculative.Validate(); !st.ok()) return st;
  if (!eo.kv_disk.dir.empty()) eo.kv_disk.serving_key = KvDiskServingKey(config, model);
  s->engine_ = std::make_unique<Engine>(model, tokenizer, eo);
  if (const auto& ke = config.cache.kv_events; ke.enabled) {
    KvEventPublisherOptions po;
    po.endpoint = ke.endpoint;
    po.replay_endpoint = ke.replay_endpoint;
    po.topic = ke.topic;
    po.buffer_steps = ke.buffer_steps;
    po.block_size = s->engine_->scheduler().options().block_size;
    po.sliding_window = s->engine_->scheduler().options().sliding_window;
    po.wire.int_block_hashes = ke.int_block_hashes;
    auto publisher = KvEventPublisher::Start(std::move(po));
    if (!publisher.ok()) return publisher.status().WithContext("cache.kv_events");
    s->kv_events_ = std::move(*publisher);
  }
  s->loop_ = std::make_unique<EngineLoop>(*s->engine_, s->kv_events_.get());
  auto server = OpenAiServer::Start(config, *s->loop_, *s->renderer_, std::move(model_id),
                                    std::move(*access_log));
  if (!server.ok()) return server.status();
  s->server_ = std::move(*server);
  return s;
}

LocalServing::~LocalServing() { Stop(); }

void LocalServing::Stop() {
  if (server_) server_->BeginDrain();
  // The engine thread cancels what is left; the server then flushes those
  // answers and closes the connections.
  if (loop_) loop_->Stop();
  // What the disk tier was handed is on disk before the process ends.
  if (engine_) engine_->FlushKvDisk();
  if (server_) server_->Stop();
}

}  // namespace brisk
