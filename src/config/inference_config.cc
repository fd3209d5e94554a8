#include "config/inference_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "config/config_yaml.h"
#include "util/log.h"

namespace brisk {

namespace {

using config_yaml::Describe;
using config_yaml::Field;
using config_yaml::LineOf;
using config_yaml::Loc;
using config_yaml::ParseFiniteDouble;
using config_yaml::ParseInt64;
using config_yaml::Reader;
using config_yaml::Section;
using config_yaml::Trim;

// LoadPrecisionType (model/model.h) takes each of these.
constexpr std::string_view kPrecisions[] = {
    "native", "f32",  "f16",  "bf16", "q8_0", "q4_0", "int8", "int4",   "fp8",   "q4_1",
    "q5_0",   "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs"};

// ParseKvPrecision (model/kv_cache.h) takes each of these.
constexpr std::string_view kMaskOverlapModes[] = {"auto", "on", "off"};
constexpr std::string_view kKvPrecisions[] = {"f16", "f32", "bf16", "int8", "fp8"};

constexpr std::string_view kUnknownFieldModes[] = {"reject", "ignore"};
constexpr std::string_view kModelNameModes[] = {"exact", "any"};
constexpr std::string_view kSpeculativeMethods[] = {"none", "ngram", "draft"};
constexpr std::string_view kRopeScalings[] = {"file", "none", "linear", "yarn"};

constexpr int64_t kMaxBytes = int64_t{1} << 62;
constexpr int64_t kMinDiskBytes = int64_t{1} << 20;

std::vector<Field> Concat(std::vector<Field> a, std::initializer_list<Field> b) {
  a.insert(a.end(), b);
  return a;
}

// The sections with their fields, bound to `c`. Ranges are sanity bounds: they
// catch typos and unit mistakes, not what a machine can do.
std::vector<Section> BuildSchema(const Reader& r, InferenceConfig& c) {
  auto& m = c.model;
  auto& s = c.scheduler;
  auto& k = c.cache;
  auto& o = c.response;
  auto& v = c.server;
  auto& l = c.limits;
  auto& g = c.logging;
  auto& sp = c.speculative;
  constexpr int64_t kIntMax = 2147483647;
  constexpr double kDay = 86400;
  return {
      {"model",
       {
           {"path", r.String(&m.path, true)},
           {"name", r.String(&m.name, true)},
           {"precision", r.OneOf(&m.precision, kPrecisions)},
           {"max_context_tokens", r.Int(&m.max_context_tokens, 0, kIntMax)},
           {"chat_template", r.String(&m.chat_template, true)},
           {"rope_scaling", r.OneOf(&m.rope_scaling, kRopeScalings)},
           {"rope_scaling_factor", r.Number(&m.rope_scaling_factor, 0, 1024)},
           {"rope_original_context", r.Int(&m.rope_original_context, 0, 1 << 24)},
           {"reasoning",
            [&r, &m](const YAML::Node& n, const Loc& loc) -> Status {
              if (n.IsScalar() && (n.Scalar() == "auto" || n.Scalar() == "off")) {
                m.reasoning = n.Scalar();
                return Status::Ok();
              }
              if (n.IsSequence() && n.size() == 2 && n[0].IsScalar() && n[1].IsScalar() &&
                  !n[0].Scalar().empty() && !n[1].Scalar().empty() &&
                  n[0].Scalar() != n[1].Scalar()) {
                m.reasoning = "markers";
                m.reasoning_start = n[0].Scalar();
                m.reasoning_end = n[1].Scalar();
                return Status::Ok();
              }
              return r.Error(loc.line,
                             "{}: expected auto, off or [start marker, end marker] (two "
                             "different non-empty strings), got {}",
                             loc.path, Describe(n));
            }},
       }},
      {"scheduler",
       {
           {"continuous_batching", r.Bool(&s.continuous_batching)},
           {"max_concurrent_sequences", r.Int(&s.max_concurrent_sequences, 1, 65536)},
           {"max_batch_tokens", r.Int(&s.max_batch_tokens, 1, 1 << 20)},
           {"prefill_chunk_tokens", r.Int(&s.prefill_chunk_tokens, 0, 1 << 20)},
           {"threads", r.Int(&s.threads, 0, 4096)},
           {"kv_cache_bytes", r.Bytes(&s.kv_cache_bytes, kMaxBytes)},
           {"aging_seconds", r.Seconds(&s.aging_s, false, kDay)},
           {"fair_share", r.Bool(&s.fair_share)},
           {"grammar_mask_overlap", r.OneOf(&s.grammar_mask_overlap, kMaskOverlapModes)},
       }},
      {"cache",
       {
           {"kv_cache", r.Bool(&k.kv_cache)},
           {"prefix_cache", r.Bool(&s.prefix_cache)},
           {"block_size", r.PowerOfTwo(&s.block_size, 256)},
           {"kv_precision", r.OneOf(&k.kv_precision, kKvPrecisions)},
           {"share_prefix_across_tenants", r.Bool(&k.share_prefix_across_tenants)},
           {"disk_path", r.String(&k.disk_path, true)},
           {"disk_bytes", r.Bytes(&k.disk_bytes, kMaxBytes)},
           {"kv_events",
            [&r, &ke = k.kv_events](const YAML::Node& v, const Loc& at) -> Status {
              Reader er = r;  // the nested map's own reader
              return er.ReadMap(v, at,
                                {
                                    {"enabled", er.Bool(&ke.enabled)},
                                    {"endpoint", er.String(&ke.endpoint, false)},
                                    {"replay_endpoint", er.String(&ke.replay_endpoint, true)},
                                    {"topic", er.String(&ke.topic, true)},
                                    {"buffer_steps", er.Int(&ke.buffer_steps, 1, 1000000)},
                                    {"hash_seed", er.String(&ke.hash_seed, true)},
                                    {"int_block_hashes", er.Bool(&ke.int_block_hashes)},
                                },
                                {});
            }},
       }},
      {"response",
       {
           {"streaming", r.Bool(&o.streaming)},
           {"cancel_on_disconnect", r.Bool(&o.cancel_on_disconnect)},
       }},
      {"server", Concat(ListenerFields(r, v),
                        {
                            {"drain_grace_s", r.Seconds(&v.drain_grace_s, false, kDay)},
                            {"metrics_require_key", r.Bool(&v.metrics_require_key)},
                            {"unknown_request_fields",
                             r.OneOf(&v.unknown_request_fields, kUnknownFieldModes)},
                            {"model_names", r.OneOf(&v.model_names, kModelNameModes)},
                        })},
      {"limits",
       {
           {"max_tokens", r.Int(&l.max_tokens, 1, 1 << 24)},
           {"default_max_tokens", r.Int(&l.default_max_tokens, 1, 1 << 24)},
           {"max_n", r.Int(&l.max_n, 1, 128)},
           {"max_queue_interactive", r.Int(&s.max_waiting[0], 1, 1 << 24)},
           {"max_queue_batch", r.Int(&s.max_waiting[1], 1, 1 << 24)},
           {"default_timeout_s", r.Seconds(&l.default_timeout_s, true, 7 * kDay)},
           {"max_timeout_s", r.Seconds(&l.max_timeout_s, true, 7 * kDay)},
           {"max_stop_strings", r.Int(&l.max_stop_strings, 0, 64)},
           {"max_prompts_per_request", r.Int(&l.max_prompts_per_request, 1, 4096)},
       }},
      {"speculative",
       {
           {"method", r.OneOf(&sp.method, kSpeculativeMethods)},
           {"draft_model", r.String(&sp.draft_model, true)},
           {"num_tokens", r.Int(&sp.num_tokens, 1, 16)},
           {"ngram_min", r.Int(&sp.ngram_min, 1, 8)},
           {"ngram_max", r.Int(&sp.ngram_max, 1, 8)},
           {"max_batch", r.Int(&sp.max_batch, 1, 65536)},
           {"min_gain_percent", r.Int(&sp.min_gain_percent, 0, 900)},
           {"adaptive", r.Bool(&sp.adaptive)},
       }},
      {"logging",
       {
           {"level", r.OneOf(&g.level, log::LevelNames())},
           {"format", r.OneOf(&g.format, log::FormatNames())},
           {"access_log", r.Bool(&g.access_log)},
           {"access_log_path", r.String(&g.access_log_path, false)},
           {"otlp_endpoint", r.String(&g.otlp_endpoint, true)},
       }},
  };
}

bool IsPrintableToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char ch : s) {
    if (ch <= 0x20 || ch == 0x7f) return false;
  }
  return true;
}

// keys: [{key|key_env, tenant, feature, name, role}, ...]
Status ReadKeys(const Reader& r, const YAML::Node& n, const Loc& at,
                std::vector<ApiKeyConfig>* out) {
  if (n.IsNull()) return Status::Ok();
  if (!n.IsSequence()) {
    return r.Error(at.line, "keys: expected a sequence of {{key, tenant, feature}} maps, got {}",
                   Describe(n));
  }
  std::vector<int> lines;
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node& e = n[i];
    Loc entry{fmt::format("keys[{}]", i), LineOf(e, at.line)};
    ApiKeyConfig key;
    std::string key_env;
    bool has_key = false, has_env = false, has_tenant = false;
    // A copy, so that key lines recorded for this entry stay with it.
    Reader er = r;
    std::vector<Field> fields = {
        {"key",
         [&](const YAML::Node& v, const Loc& loc) -> Status {
           has_key = true;
           if (!v.IsScalar() || !IsPrintableToken(v.Scalar())) {
             return r.Error(loc.line, "{}: expected a non-empty token without spaces", loc.path);
           }
           key.key = v.Scalar();
           return Status::Ok();
         }},
        {"key_env",
         [&](const YAML::Node& v, const Loc& loc) -> Status {
           has_env = true;
           return r.String(&key_env, false)(v, loc);
         }},
        {"tenant",
         [&](const YAML::Node& v, const Loc& loc) -> Status {
           has_tenant = true;
           return r.String(&key.tenant, false)(v, loc);
         }},
        {"feature", r.String(&key.feature, true)},
        {"name", r.String(&key.name, false)},
        {"role",
         [&](const YAML::Node& v, const Loc& loc) -> Status {
           if (!v.IsScalar() || (v.Scalar() != "user" && v.Scalar() != "admin")) {
             return r.Error(loc.line, "{}: expected user or admin, got {}", loc.path, Describe(v));
           }
           key.admin = v.Scalar() == "admin";
           return Status::Ok();
         }},
    };
    if (!e.IsMap()) {
      return r.Error(entry.line,
                     "{}: expected a map with keys key (or key_env), tenant, feature, name, "
                     "role, got {}",
                     entry.path, Describe(e));
    }
    RETURN_IF_ERROR(er.ReadMap(e, entry, fields, {}));
    if (has_key && has_env) {
      return r.Error(entry.line, "{}: set only one of 'key' and 'key_env'", entry.path);
    }
    if (!has_key && !has_env) {
      return r.Error(entry.line,
                     "{}: missing 'key' (or 'key_env': NAME to read it from the "
                     "environment)",
                     entry.path);
    }
    if (!has_tenant) {
      return r.Error(entry.line, "{}: missing 'tenant' (every API key belongs to a tenant)",
                     entry.path);
    }
    if (key.name.empty()) key.name = key.tenant;
    if (has_env) {
      int line = er.LineOfKey(entry.path + ".key_env");
      const char* value = std::getenv(key_env.c_str());
      if (value == nullptr) {
        return r.Error(line, "{}.key_env: environment variable '{}' is not set", entry.path,
                       key_env);
      }
      if (!IsPrintableToken(value)) {
        return r.Error(line, "{}.key_env: environment variable '{}' is empty or has spaces",
                       entry.path, key_env);
      }
      key.key = value;
    }
    // Never echo a key in a message: they are secrets.
    for (size_t j = 0; j < out->size(); ++j) {
      if ((*out)[j].key == key.key) {
        return r.Error(entry.line, "{}: duplicate API key (same as keys[{}] at line {})",
                       entry.path, j, lines[j]);
      }
    }
    out->push_back(std::move(key));
    lines.push_back(entry.line);
  }
  return Status::Ok();
}

}  // namespace

Status CheckRopeScalingKeys(const InferenceConfig::Model& m) {
  const bool scaled = m.rope_scaling == "linear" || m.rope_scaling == "yarn";
  if (!scaled && m.rope_scaling_factor != 0)
    return InvalidArgument(
        "model.rope_scaling_factor needs model.rope_scaling: linear or yarn (it is '{}')",
        m.rope_scaling);
  if (!scaled && m.rope_original_context != 0)
    return InvalidArgument(
        "model.rope_original_context needs model.rope_scaling: linear or yarn (it is '{}')",
        m.rope_scaling);
  if (m.rope_scaling_factor > 0 && m.rope_scaling_factor < 1)
    return InvalidArgument(
        "model.rope_scaling_factor must be 0 (from max_context_tokens) or >= 1, got {}",
        m.rope_scaling_factor);
  if (scaled && m.rope_scaling_factor == 0 && m.max_context_tokens == 0)
    return InvalidArgument(
        "model.rope_scaling: {} needs model.rope_scaling_factor or model.max_context_tokens (the "
        "context to extend to)",
        m.rope_scaling);
  return Status::Ok();
}

namespace {

// Checks that involve two keys; reported at the line of whichever was set.
Status CheckConsistency(const Reader& r, const InferenceConfig& c) {
  auto line = [&](std::string_view a, std::string_view b) {
    return std::max(r.LineOfKey(a), r.LineOfKey(b));
  };
  if (c.scheduler.prefill_chunk_tokens > c.scheduler.max_batch_tokens) {
    return r.Error(line("scheduler.prefill_chunk_tokens", "scheduler.max_batch_tokens"),
                   "scheduler.prefill_chunk_tokens ({}) must not exceed "
                   "scheduler.max_batch_tokens ({})",
                   c.scheduler.prefill_chunk_tokens, c.scheduler.max_batch_tokens);
  }
  if (Status st = CheckRopeScalingKeys(c.model); !st.ok()) {
    const int at = std::max(line("model.rope_scaling", "model.rope_scaling_factor"),
                            line("model.rope_original_context", "model.max_context_tokens"));
    return r.Error(at, "{}", st.message());
  }
  if (c.cache.kv_events.enabled && !c.scheduler.prefix_cache) {
    return r.Error(line("cache.kv_events", "cache.prefix_cache"),
                   "cache.kv_events tells what the prefix cache holds: it needs "
                   "cache.prefix_cache: true");
  }
  if (!c.cache.disk_path.empty() && !c.scheduler.prefix_cache) {
    return r.Error(line("cache.disk_path", "cache.prefix_cache"),
                   "cache.disk_path is a tier under the prefix cache: it needs "
                   "cache.prefix_cache: true");
  }
  if (!c.cache.disk_path.empty() && c.cache.disk_bytes < kMinDiskBytes) {
    return r.Error(line("cache.disk_bytes", "cache.disk_path"),
                   "cache.disk_bytes ({}) must be at least {} (1MiB) with cache.disk_path set",
                   c.cache.disk_bytes, kMinDiskBytes);
  }
  if (c.scheduler.prefix_cache && !c.cache.kv_cache) {
    return r.Error(line("cache.prefix_cache", "cache.kv_cache"),
                   "cache.prefix_cache: true needs cache.kv_cache: true (set prefix_cache: "
                   "false to run without a KV cache)");
  }
  if (c.limits.default_max_tokens > c.limits.max_tokens) {
    return r.Error(line("limits.default_max_tokens", "limits.max_tokens"),
                   "limits.default_max_tokens ({}) must not exceed limits.max_tokens ({})",
                   c.limits.default_max_tokens, c.limits.max_tokens);
  }
  if (c.speculative.ngram_min > c.speculative.ngram_max) {
    return r.Error(line("speculative.ngram_min", "speculative.ngram_max"),
                   "speculative.ngram_min ({}) must not exceed speculative.ngram_max ({})",
                   c.speculative.ngram_min, c.speculative.ngram_max);
  }
  if ((c.speculative.method == "draft") != !c.speculative.draft_model.empty()) {
    return r.Error(line("speculative.method", "speculative.draft_model"),
                   "speculative.draft_model (a GGUF with the model's tokenizer) is needed by "
                   "speculative.method: draft, and only by it (method is '{}')",
                   c.speculative.method);
  }
  if (c.limits.default_timeout_s > c.limits.max_timeout_s) {
    return r.Error(line("limits.default_timeout_s", "limits.max_timeout_s"),
                   "limits.default_timeout_s ({}) must not exceed limits.max_timeout_s ({})",
                   c.limits.default_timeout_s, c.limits.max_timeout_s);
  }
  return Status::Ok();
}

Expected<InferenceConfig> ParseDocument(const YAML::Node& doc, std::string_view filename) {
  InferenceConfig c;
  Reader r(filename);
  std::vector<Section> sections = BuildSchema(r, c);
  std::vector<Field> top = r.SectionFields(sections);
  top.push_back({"keys", [&r, &c](const YAML::Node& v, const Loc& at) {
                   return ReadKeys(r, v, at, &c.keys);
                 }});
  RETURN_IF_ERROR(r.ReadMap(doc, Loc{"", LineOf(doc, 1)}, top, sections));
  RETURN_IF_ERROR(CheckConsistency(r, c));
  return c;
}

}  // namespace

std::span<const std::string_view> PrecisionNames() { return kPrecisions; }
std::span<const std::string_view> KvPrecisionConfigNames() { return kKvPrecisions; }

Status config_yaml::ReadApiKeys(const Reader& r, const YAML::Node& n, const Loc& at,
                                std::vector<ApiKeyConfig>* out) {
  return ReadKeys(r, n, at, out);
}

Expected<int64_t> ParseByteSize(std::string_view text) {
  std::string_view s = Trim(text);
  auto bad = [&] {
    return InvalidArgument("expected a size in bytes like 536870912, 512MiB or 1.5GB, got '{}'",
                           text);
  };
  size_t n = 0;
  while (n < s.size() && ((s[n] >= '0' && s[n] <= '9') || s[n] == '.')) ++n;
  std::string_view number = s.substr(0, n);
  std::string unit(Trim(s.substr(n)));
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  static const std::pair<std::string_view, int64_t> kUnits[] = {
      {"", 1},
      {"b", 1},
      {"k", 1000},
      {"kb", 1000},
      {"m", 1000000},
      {"mb", 1000000},
      {"g", 1000000000},
      {"gb", 1000000000},
      {"t", 1000000000000},
      {"tb", 1000000000000},
      {"ki", int64_t{1} << 10},
      {"kib", int64_t{1} << 10},
      {"mi", int64_t{1} << 20},
      {"mib", int64_t{1} << 20},
      {"gi", int64_t{1} << 30},
      {"gib", int64_t{1} << 30},
      {"ti", int64_t{1} << 40},
      {"tib", int64_t{1} << 40},
  };
  auto u = std::find_if(std::begin(kUnits), std::end(kUnits),
                        [&](const auto& e) { return e.first == unit; });
  if (number.empty() || u == std::end(kUnits)) return bad();
  int64_t bytes = 0;
  if (number.find('.') == std::string_view::npos) {
    int64_t x = 0;
    if (!ParseInt64(number, &x)) return bad();
    if (__builtin_mul_overflow(x, u->second, &bytes)) bytes = kMaxBytes + 1;
  } else {
    double x = 0;
    if (!ParseFiniteDouble(number, &x)) return bad();
    long double b = static_cast<long double>(x) * u->second;
    bytes = b > kMaxBytes ? kMaxBytes + 1 : static_cast<int64_t>(b);
  }
  if (bytes < 1) return InvalidArgument("size must be at least 1 byte, got '{}'", text);
  if (bytes > kMaxBytes) return InvalidArgument("size '{}' is too large", text);
  return bytes;
}

Expected<InferenceConfig> ParseInferenceConfig(std::string_view yaml_text,
                                               std::string_view filename) {
  InferenceConfig c;
  RETURN_IF_ERROR(
      config_yaml::WithYamlDocument(yaml_text, filename, [&](const YAML::Node& doc) -> Status {
        if (doc.IsNull()) return Status::Ok();  // empty file or only comments
        ASSIGN_OR_RETURN(c, ParseDocument(doc, filename));
        return Status::Ok();
      }));
  return c;
}

Expected<InferenceConfig> LoadInferenceConfig(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, config_yaml::ReadConfigFile(path));
  return ParseInferenceConfig(text, path);
}

}  // namespace brisk
