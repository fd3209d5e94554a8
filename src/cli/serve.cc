// `brisk serve`: the OpenAI-compatible server on one model. With no flags it
// serves the embedded default model on 127.0.0.1:8000; `--config
// inference.yaml` reads the serving profile; flags override the file.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "cli/local_serving.h"
#include "cli/serve_until_signal.h"
#include "cli/serving_gate.h"
#include "config/inference_config.h"
#include "util/log.h"

namespace brisk {
namespace {

struct ServeFlags {
  std::string config;
  std::string model;
  std::string model_name;
  std::string chat_template;
  std::string host;
  int port = -1;
  int threads = 0;
  int64_t max_batch_tokens = 0;
  int64_t max_context_tokens = 0;
  int64_t max_concurrent = 0;
  std::string kv_cache;
  std::string precision;     // "" = the config's model.precision
  std::string kv_precision;  // "" = the config's cache.kv_precision
  bool allow_ungated = false;
  bool serving_key = false;
  std::string gate_dir;  // "" = DefaultGateDir()
  bool no_prefix_cache = false;
  bool static_batching = false;
  std::string log_level;     // "" = the config's logging.level
  std::string draft_model;   // "" = the config's speculative section
  std::string rope_scaling;  // "" = the config's model.rope_scaling
  double rope_scaling_factor = -1;
  int64_t rope_original_context = -1;
};

// A startup failure is always said, also with logging.level: off.
int Fail(const Status& s) {
  if (log::Enabled(log::Level::kError))
    log::Error("brisk serve: {}", s.ToString());
  else
    std::fprintf(stderr, "brisk serve: %s\n", s.ToString().c_str());
  return 1;
}

// Logging as the config says, with --log-level over logging.level. Both are
// validated already (config loader, CLI11), so parsing cannot fail here.
void InitLogging(const InferenceConfig::Logging& c) {
  auto level = log::ParseLevel(c.level);
  auto format = log::ParseFormat(c.format);
  log::Init(level.ok() ? *level : log::Level::kInfo, format.ok() ? *format : log::Format::kText);
}

// The serving profile: the config file (if any) with the flags over it, and
// logging set up as it says.
Expected<InferenceConfig> ServeConfig(const ServeFlags& f) {
  InferenceConfig cfg;
  if (!f.log_level.empty()) cfg.logging.level = f.log_level;
  InitLogging(cfg.logging);  // until the config is read: text, at the flag's level
  if (!f.config.empty()) {
    ASSIGN_OR_RETURN(cfg, LoadInferenceConfig(f.config));
  }
  if (!f.log_level.empty()) cfg.logging.level = f.log_level;
  InitLogging(cfg.logging);
  if (!f.model.empty()) cfg.model.path = f.model;
  if (!f.model_name.empty()) cfg.model.name = f.model_name;
  if (!f.chat_template.empty()) cfg.model.chat_template = f.chat_template;
  if (!f.host.empty()) cfg.server.host = f.host;
  if (f.port >= 0) cfg.server.port = f.port;
  if (f.threads > 0) cfg.scheduler.threads = f.threads;
  if (f.max_batch_tokens > 0) cfg.scheduler.max_batch_tokens = static_cast<int>(f.max_batch_tokens);
  if (f.max_context_tokens > 0) cfg.model.max_context_tokens = f.max_context_tokens;
  if (!f.rope_scaling.empty()) cfg.model.rope_scaling = f.rope_scaling;
  if (f.rope_scaling_factor >= 0) cfg.model.rope_scaling_factor = f.rope_scaling_factor;
  if (f.rope_original_context >= 0) cfg.model.rope_original_context = f.rope_original_context;
  if (f.max_concurrent > 0)
    cfg.scheduler.max_concurrent_sequences = static_cast<int>(f.max_concurrent);
  if (!f.kv_cache.empty()) {
    auto b = ParseByteSize(f.kv_cache);
    if (!b.ok()) return b.status().WithContext("--kv-cache");
    cfg.scheduler.kv_cache_bytes = *b;
  }
  if (f.no_prefix_cache) cfg.scheduler.prefix_cache = false;
  if (f.static_batching) cfg.scheduler.continuous_batching = false;
  if (!f.draft_model.empty()) {
    cfg.speculative.method = "draft";
    cfg.speculative.draft_model = f.draft_model;
  }
  if (!f.precision.empty()) cfg.model.precision = f.precision;
  if (!f.kv_precision.empty()) cfg.cache.kv_precision = f.kv_precision;
  if (cfg.model.path.empty()) cfg.model.path = DefaultModelPath();
  return cfg;
}

// What the golden-set gate said of the served configuration.
struct GateDecision {
  bool changed = false;  // a serving change: it needs a passing report
  bool keyed = false;    // the serving key was computed (changed, or --serving-key)
  bool gated = true;     // false: served --allow-ungated without a passing report
  ServingKey key;
  std::string report;  // the passing report's path (changed and gated)
};

// A precision other than the file's own, a KV precision other than F16, or a
// RoPE scaling other than the file's is a serving change: it starts only with
// a passing golden-set gate report for exactly this model file, precision, KV
// precision, scaling and engine version (serving_gate.h), or with
// --allow-ungated, which it then says in the log, /metrics and /v1/models. The
// defaults need no gate, so only a changed configuration hashes the whole file
// (seconds for a large model).
Expected<GateDecision> CheckServingGate(const ServeFlags& f, const InferenceConfig& cfg,
                                        const Model& model, bool precision_changed,
                                        KvType kv_type) {
  GateDecision g;
  const std::string rope =
      cfg.model.rope_scaling == "file" ? "file" : RopeScalingKey(model.config().rope_scaling);
  g.changed = precision_changed || kv_type != KvType::kF16 || rope != "file";
  // --serving-key: the file's own precision reports its key too, so a new
  // model file can pass a gate of its own (`brisk eval golden --save-gate`,
  // then the gateway's rollout gate), at the cost of hashing the file.
  g.keyed = g.changed || f.serving_key;
  if (g.keyed) {
    g.key.model_hash = ModelFileHash(model.file().bytes());
    g.key.precision = cfg.model.precision;
    g.key.kv_precision = cfg.cache.kv_precision;
    g.key.rope = rope;
  }
  if (!g.changed) return g;
  const std::string gate_dir = f.gate_dir.empty() ? DefaultGateDir() : f.gate_dir;
  auto report = FindPassingGateReport(gate_dir, g.key);
  if (report.ok()) {
    g.report = *report;
    return g;
  }
  if (f.allow_ungated) {
    g.gated = false;
    return g;
  }
  return InvalidArgument(
      "model.precision {} with cache.kv_precision {}{} is a serving change and needs a "
      "passing golden-set gate report ({}). Make one: start this server with --allow-ungated, "
      "run "
      "`brisk eval golden --set <set.jsonl> --url <its url> --model-file {} --save-gate {}` "
      "(every threshold of the set's gate file must hold: its answers through the server "
      "and, where the gate names max_kld / min_same_top1, this configuration's KL divergence "
      "from the file's native one, scored by that command; the shipped sets are "
      "bench/golden/smollm2.jsonl and gemma3.jsonl), then start it again without "
      "--allow-ungated",
      cfg.model.precision, cfg.cache.kv_precision,
      rope == "file" ? "" : " and RoPE scaling " + rope, report.status().message(), cfg.model.path,
      gate_dir);
}

// What /v1/models, /metrics and the log say of the served configuration, and
// the line scripts read the port from.
void Announce(const InferenceConfig& cfg, const Model& model, const GateDecision& gate,
              const std::string& id, int threads, OpenAiServer& server) {
  nlohmann::ordered_json info = {{"precision", cfg.model.precision},
                                 {"kv_precision", cfg.cache.kv_precision},
                                 {"gated", gate.gated}};
  if (gate.keyed) info["serving_key"] = gate.key.ToJson();
  if (const RopeScaling& rs = model.config().rope_scaling; rs.type != RopeScaling::Type::kNone)
    info["rope_scaling"] = {{"type", RopeScalingTypeName(rs.type)},
                            {"factor", rs.factor},
                            {"original_context", rs.original_context},
                            {"context", model.config().context_length}};
  if (gate.changed) info["gate_report"] = gate.report;
  server.SetServingInfo(info);
  server.registry()
      .GetGauge("brisk:serving_ungated",
                "1 when a converted precision or KV precision is served without a passing gate "
                "report (--allow-ungated)")
      ->Set(gate.gated ? 0 : 1);
  if (!gate.gated) {
    log::Warn(
        "serving {} with precision {} and KV precision {} WITHOUT a passing golden-set gate "
        "(--allow-ungated; serving key {})",
        id, cfg.model.precision, cfg.cache.kv_precision, gate.key.Id());
  } else if (!gate.report.empty()) {
    log::Info("precision {}, KV precision {}: gate report {}", cfg.model.precision,
              cfg.cache.kv_precision, gate.report);
  }
  std::printf(
      "brisk: serving %s on http://%s:%d (threads %d, %s batching, prefix cache %s, KV %s)\n",
      id.c_str(), cfg.server.host.c_str(), server.port(), threads,
      cfg.scheduler.continuous_batching ? "continuous" : "static",
      cfg.scheduler.prefix_cache ? "on" : "off", cfg.cache.kv_precision.c_str());
  std::fflush(stdout);
  // The line above is for people and scripts (it has the port); a JSON log
  // gets the same as an event.
  if (log::GetFormat() == log::Format::kJson) {
    log::Info("serving {} on http://{}:{} (threads {}, {} batching, prefix cache {})", id,
              cfg.server.host, server.port(), threads,
              cfg.scheduler.continuous_batching ? "continuous" : "static",
              cfg.scheduler.prefix_cache ? "on" : "off");
  }
}

// Load the config, load the model, check the gate, start, serve until a
// signal (cli/serve_until_signal.h).
int RunServe(const ServeFlags& f) {
  const sigset_t sigs = BlockShutdownSignals();  // before any thread starts

  auto config = ServeConfig(f);
  if (!config.ok()) return Fail(config.status());
  const InferenceConfig& cfg = *config;
  const std::string& path = cfg.model.path;
  int threads = cfg.scheduler.threads;
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  auto kv_type = ParseKvPrecision(cfg.cache.kv_precision);
  if (!kv_type.ok()) return Fail(kv_type.status().WithContext("cache.kv_precision"));
  auto precision = LoadPrecisionType(cfg.model.precision);
  if (!precision.ok()) return Fail(precision.status().WithContext("model.precision"));
  LoadOptions load_options;
  load_options.precision = *precision;
  if (Status st = SetRopeScaling(cfg.model, &load_options); !st.ok()) return Fail(st);
  auto model = Model::Load(path, load_options);
  if (!model.ok()) return Fail(model.status().WithContext("loading " + path));

  auto gate = CheckServingGate(f, cfg, **model, precision->to.has_value(), *kv_type);
  if (!gate.ok()) return Fail(gate.status());

  auto tok = Tokenizer::FromGguf((*model)->file());
  if (!tok.ok()) return Fail(tok.status().WithContext("loading the tokenizer of " + path));
  std::string id = cfg.model.name;
  if (id.empty()) id = std::filesystem::path(path).stem().string();
  auto serving = LocalServing::Start(cfg, **model, **tok, id, threads);
  if (!serving.ok()) return Fail(serving.status());
  OpenAiServer& server = (*serving)->server();
  Announce(cfg, **model, *gate, id, threads, server);

  LocalServing& local = **serving;
  const int code =
      ServeUntilSignal(sigs, {.begin_drain = [&server] { server.BeginDrain(); },
                              .in_flight = [&server] { return server.active_requests(); },
                              .stop = [&local] { local.Stop(); },
                              .drain_grace_s = cfg.server.drain_grace_s,
                              .name = "brisk serve"});
  // Everything has stopped; the process's memory goes back with it.
  std::_Exit(code);
}

}  // namespace

CommandRunner RegisterServe(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  app.add_option("-c,--config", f->config, "inference.yaml serving profile");
  app.add_option("-m,--model", f->model, "GGUF model file (default: the embedded model)");
  app.add_option("--model-name", f->model_name, "model id served (default: the file's stem)");
  app.add_option("--chat-template", f->chat_template,
                 "Jinja chat template file used instead of the model's (model.chat_template)");
  app.add_option("--host", f->host, "address to listen on (default 127.0.0.1)");
  app.add_option("-p,--port", f->port, "port (default 8000; 0 = any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("-t,--threads", f->threads, "engine threads (default: all cores)")
      ->check(CLI::Range(1, 256));
  app.add_option("--max-batch-tokens", f->max_batch_tokens, "tokens per engine step")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--max-context-tokens", f->max_context_tokens,
                 "context cap per request (default: the model's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  app.add_option("--rope-scaling", f->rope_scaling,
                 "RoPE context extension: file (the GGUF's own), none, linear, yarn "
                 "(model.rope_scaling)")
      ->check(CLI::IsMember({"file", "none", "linear", "yarn"}));
  app.add_option("--rope-scaling-factor", f->rope_scaling_factor,
                 "context multiplier (default: max-context-tokens / the trained context)")
      ->check(CLI::Range(1.0, 1024.0));
  app.add_option("--rope-original-context", f->rope_original_context,
                 "the trained context the factor extends (default: the file's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  app.add_option("--max-concurrent", f->max_concurrent, "running sequences at most")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  app.add_option("--kv-cache", f->kv_cache, "KV cache memory, e.g. 512MiB");
  app.add_option("--precision", f->precision,
                 "weights: native (the file's), f32, f16, bf16, q8_0, q4_0, int8, int4, fp8, ... "
                 "(converted at load; docs/config.md)");
  app.add_option("--kv-precision", f->kv_precision,
                 "KV cache: f16 (default), f32, bf16, int8, fp8 (int8/fp8 hold ~2x the tokens)");
  app.add_flag("--allow-ungated", f->allow_ungated,
               "serve a converted precision or KV precision without a passing golden-set gate "
               "report");
  app.add_flag("--serving-key", f->serving_key,
               "report the serving key (the model file's hash) at the file's own precision too, "
               "for a rollout candidate's gate (hashes the file at startup)");
  app.add_option("--gate-dir", f->gate_dir,
                 "gate reports (default $BRISK_GATE_DIR, else ~/.cache/brisk/gates)");
  app.add_flag("--no-prefix-cache", f->no_prefix_cache, "turn the prefix cache off");
  app.add_flag("--static-batching", f->static_batching,
               "static batching (the baseline continuous batching is measured against)");
  app.add_option("--draft-model", f->draft_model,
                 "speculative decoding with this draft GGUF (the model's tokenizer; "
                 "speculative.method: draft)");
  app.add_option("--log-level", f->log_level, "log level (default: the config's, else info)")
      ->check(CLI::IsMember(
          std::vector<std::string>(log::LevelNames().begin(), log::LevelNames().end())));
  return [f] { return RunServe(*f); };
}

}  // namespace brisk
