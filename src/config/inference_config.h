// inference.yaml: the serving profile (model, scheduler, caches, response,
// server, limits, logging, API keys). docs/config.md describes every key.
//
// The loader checks YAML syntax, key names, types and ranges, and reports the
// first problem as "file:line: what is wrong (what is allowed)". It does not
// check what the engine can do (e.g. whether a precision is implemented);
// the serve command does that at startup.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/listener_config.h"
#include "engine/scheduler_options.h"
#include "http/caller_identity.h"  // ApiKeyConfig
#include "util/status.h"

namespace brisk {

struct InferenceConfig {
  struct Model {
    std::string path;                  // "" = the embedded default model
    std::string name;                  // served model id; "" = derived from the file
    std::string precision = "native";  // one of PrecisionNames()
    int64_t max_context_tokens = 0;    // 0 = the model's context length
    std::string chat_template;         // Jinja file replacing the GGUF's; "" = the file's
    // RoPE context extension (model/rope_scaling.h): "file" = as the GGUF
    // says; none | linear | yarn replace the file's.
    std::string rope_scaling = "file";
    double rope_scaling_factor = 0;     // 0 = max_context_tokens / rope_original_context
    int64_t rope_original_context = 0;  // 0 = the file's trained context
    // Reasoning output apart from the answer (server/reasoning.h): "auto" (the
    // template's <think> markers, if it has them), "off", or "markers" with
    // the two given in YAML as [start, end].
    std::string reasoning = "auto";
    std::string reasoning_start, reasoning_end;
    bool operator==(const Model&) const = default;
  } model;
  // The scheduler's options (engine/scheduler_options.h) as the profile sets
  // them: scheduler.{continuous_batching, max_concurrent_sequences,
  // max_batch_tokens, prefill_chunk_tokens, fair_share, aging_seconds (aging_s)},
  // cache.{block_size, prefix_cache} and limits.{max_queue_interactive,
  // max_queue_batch} (max_waiting), plus the engine's own scheduler keys.
  struct Scheduler : SchedulerOptions {
    int threads = 0;                              // 0 = all cores
    int64_t kv_cache_bytes = int64_t{512} << 20;  // YAML: integer or "512MiB", "2GiB", "1.5GB"
    std::string grammar_mask_overlap = "auto";    // auto | on | off (EngineOptions::mask_overlap)
    bool operator==(const Scheduler&) const = default;
  } scheduler;
  struct Cache {
    bool kv_cache = true;              // prefix_cache and block_size: in scheduler
    std::string kv_precision = "f16";  // one of KvPrecisionNames() (model/kv_cache.h)
    bool share_prefix_across_tenants = false;
    // KV events in vLLM's wire format (engine/kv_event_publisher.h): what the
    // prefix cache holds, for fleet routers. Off by default.
    struct KvEvents {
      bool enabled = false;
      std::string endpoint = "tcp://*:5557";         // PUB
      std::string replay_endpoint = "tcp://*:5558";  // ROUTER; "" = none
      std::string topic;                             // e.g. kv@<pod>@<model> for llm-d
      int buffer_steps = 10000;                      // batches kept for replay
      std::string hash_seed = "0";                   // vLLM's PYTHONHASHSEED
      bool int_block_hashes = false;                 // vLLM's VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES
      bool operator==(const KvEvents&) const = default;
    } kv_events;
    // The disk tier under the prefix cache (engine/kv_disk_tier.h): full
    // blocks are kept in this directory (written as they are computed), up
    // to disk_bytes, and read back instead of recomputed when the RAM cache
    // has evicted them, across restarts. "" = off.
    std::string disk_path;
    int64_t disk_bytes = int64_t{10} << 30;  // YAML: integer or "10GiB"
    bool operator==(const Cache&) const = default;
  } cache;
  struct Response {
    bool streaming = true;
    bool cancel_on_disconnect = true;
    bool operator==(const Response&) const = default;
  } response;
  struct Server : ListenerConfig {
    double drain_grace_s = 30;         // on shutdown, in-flight requests get this long
    bool metrics_require_key = false;  // /metrics answers only with an API key (when keys exist)
    // Request bodies with keys the API does not know: "reject" (a 400, as
    // OpenAI) or "ignore" (skipped, listed in the x-brisk-ignored-fields
    // response header and counted in brisk:ignored_request_fields_total).
    std::string unknown_request_fields = "reject";
    // A request's "model" naming another model than the one served: "exact"
    // (404 model_not_found, as OpenAI and vLLM) or "any" (served anyway, as
    // llama-server does). A request without "model" is served either way.
    std::string model_names = "exact";
    bool operator==(const Server&) const = default;
  } server;
  struct Limits {
    int max_tokens = 4096;  // server cap for a request's max_tokens
    int default_max_tokens = 256;
    int max_n = 8;
    double default_timeout_s = 600;
    double max_timeout_s = 3600;
    int max_stop_strings = 4;
    // /v1/completions: prompts in one request (each yields n sequences).
    int max_prompts_per_request = 64;
    bool operator==(const Limits&) const = default;
  } limits;
  struct Logging {
    std::string level = "info";   // one of log::LevelNames(): trace .. off
    std::string format = "text";  // log line format: text | json
    bool access_log = true;       // one JSON line per finished request
    // "-" (or "stdout") = stdout, "stderr" = stderr, else a file (appended).
    std::string access_log_path = "-";
    // OTLP/HTTP collector base URL ("http://host:4318"): each request's span
    // and its stage spans are POSTed as JSON to <otlp_endpoint>/v1/traces
    // from a background thread. "" = no export.
    std::string otlp_endpoint;
    bool operator==(const Logging&) const = default;
  } logging;
  // Speculative decoding (engine/speculator.h): off unless method is set.
  struct Speculative {
    std::string method = "none";  // none | ngram (prompt lookup) | draft (a draft model)
    std::string draft_model;      // method draft: the draft GGUF (the model's tokenizer)
    int num_tokens = 4;           // most draft tokens per sequence per step
    int ngram_min = 1;            // ngram: shortest and longest match
    int ngram_max = 4;
    int max_batch = 8;         // no drafts while more sequences than this run
    int min_gain_percent = 5;  // draft only when the policy expects this much speedup
    bool adaptive = true;      // false: always draft num_tokens (up to max_batch)
    bool operator==(const Speculative&) const = default;
  } speculative;
  std::vector<ApiKeyConfig> keys;  // empty = no authentication
  bool operator==(const InferenceConfig&) const = default;
};

// Accepted values of model.precision: native (the file's own types), f32,
// f16, bf16, q8_0, q4_0, int8, int4, fp8.
std::span<const std::string_view> PrecisionNames();
// Accepted values of cache.kv_precision: f16, f32, bf16, int8, fp8.
std::span<const std::string_view> KvPrecisionConfigNames();

// Parses an inference.yaml document; `filename` is only used in messages.
// An empty document (or only comments) gives all defaults. `key_env:` entries
// read the environment. Errors are kInvalidArgument.
Expected<InferenceConfig> ParseInferenceConfig(std::string_view yaml_text,
                                               std::string_view filename);

// The model.rope_scaling* keys together: a factor or original context only
// with linear / yarn, a factor of 0 or >= 1, and something to extend to.
// ParseInferenceConfig runs it (at the keys' line); brisk serve again after
// its flags.
Status CheckRopeScalingKeys(const InferenceConfig::Model& m);

// Reads and parses `path`. A missing file is kNotFound, an unreadable one
// (permissions, a directory, over 16 MiB) kInvalidArgument; both name the path.
Expected<InferenceConfig> LoadInferenceConfig(const std::string& path);

// "4194304", "512MiB", "2 GiB", "1.5GB", "64k", "4Gi" -> bytes. Units, any
// case: B; K/KB, M/MB, G/GB, T/TB (powers of 1000); Ki/KiB, Mi/MiB, Gi/GiB,
// Ti/TiB (powers of 1024). Fractions are rounded down to whole bytes; the
// result must be in 1..2^62. For CLI flags too: the message has no location.
Expected<int64_t> ParseByteSize(std::string_view text);

}  // namespace brisk
