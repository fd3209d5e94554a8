#include "config/inference_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "config/inference_config_test_util.h"
#include "model/kv_cache.h"

namespace brisk {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using config_test::ErrorOf;
using config_test::kFile;
using config_test::Parse;

// The seeds' production profile, as written.
constexpr char kSeedsFlow[] =
    "model: {precision: fp8, max_context_tokens: 16384}\n"
    "scheduler: {continuous_batching: true, max_concurrent_sequences: 128, max_batch_tokens: "
    "32768}\n"
    "cache: {kv_cache: true, prefix_cache: true}\n"
    "response: {streaming: true, cancel_on_disconnect: true}\n";

constexpr char kSeedsBlock[] = R"(model:
  precision: fp8
  max_context_tokens: 16384
scheduler:
  continuous_batching: true
  max_concurrent_sequences: 128
  max_batch_tokens: 32768
cache:
  kv_cache: true
  prefix_cache: true
response:
  streaming: true
  cancel_on_disconnect: true
)";

InferenceConfig SeedsExpected() {
  InferenceConfig c;
  c.model.precision = "fp8";
  c.model.max_context_tokens = 16384;
  c.scheduler.continuous_batching = true;
  c.scheduler.max_concurrent_sequences = 128;
  c.scheduler.max_batch_tokens = 32768;
  c.cache.kv_cache = true;
  c.scheduler.prefix_cache = true;
  c.response.streaming = true;
  c.response.cancel_on_disconnect = true;
  return c;
}

TEST(ConfigTest, SeedsProfileFlowStyle) { EXPECT_EQ(Parse(kSeedsFlow), SeedsExpected()); }

TEST(ConfigTest, SeedsProfileBlockStyle) { EXPECT_EQ(Parse(kSeedsBlock), SeedsExpected()); }

TEST(ConfigTest, EmptyFileGivesDefaults) {
  const InferenceConfig defaults;
  EXPECT_EQ(Parse(""), defaults);
  EXPECT_EQ(Parse("# nothing but a comment\n\n"), defaults);
  EXPECT_EQ(Parse("---\n"), defaults);
  EXPECT_EQ(Parse("server:\nlimits:\n"), defaults);  // empty sections too
  EXPECT_EQ(defaults.model.precision, "native");
  EXPECT_EQ(defaults.scheduler.kv_cache_bytes, 512 << 20);
  EXPECT_EQ(defaults.server.max_body_bytes, 4 << 20);
}

TEST(ConfigTest, EveryKeySet) {
  setenv("BRISK_TEST_KEY_ENV", "sk-from-env", 1);
  InferenceConfig c = Parse(R"(
model: {path: /models/m.gguf, name: smol, precision: q8_0, max_context_tokens: 0,
        chat_template: /models/tools.jinja, rope_scaling: yarn, rope_scaling_factor: 4,
        rope_original_context: 32768, reasoning: ["<reason>", "</reason>"]}
scheduler:
  continuous_batching: false
  max_concurrent_sequences: 1
  max_batch_tokens: 2048
  prefill_chunk_tokens: 256
  threads: 8
  kv_cache_bytes: 2GiB
  aging_seconds: 2.5
cache: {kv_cache: true, prefix_cache: false, block_size: 32, share_prefix_across_tenants: True}
response: {streaming: false, cancel_on_disconnect: FALSE}
server:
  host: 0.0.0.0
  port: 0
  http_threads: 4
  max_body_bytes: 1MiB
  request_timeout_s: 5
  idle_timeout_s: 0.5
  max_connections: 100
  drain_grace_s: 0
  metrics_require_key: true
  unknown_request_fields: ignore
limits:
  max_tokens: 8192
  default_max_tokens: 8192
  max_n: 1
  max_queue_interactive: 10
  max_queue_batch: 20
  default_timeout_s: 30
  max_timeout_s: 30
  max_stop_strings: 0
  max_prompts_per_request: 3
logging: {level: debug, format: json, access_log: false, access_log_path: /var/log/brisk.jsonl}
keys:
  - {key: sk-abc, tenant: acme, feature: search}
  - key_env: BRISK_TEST_KEY_ENV
    tenant: globex
    role: admin
)");
  EXPECT_EQ(c.model.path, "/models/m.gguf");
  EXPECT_EQ(c.model.name, "smol");
  EXPECT_EQ(c.model.precision, "q8_0");
  EXPECT_EQ(c.model.chat_template, "/models/tools.jinja");
  EXPECT_EQ(c.model.rope_scaling, "yarn");
  EXPECT_EQ(c.model.rope_scaling_factor, 4);
  EXPECT_EQ(c.model.rope_original_context, 32768);
  EXPECT_FALSE(c.scheduler.continuous_batching);
  EXPECT_EQ(c.scheduler.max_concurrent_sequences, 1);
  EXPECT_EQ(c.scheduler.max_batch_tokens, 2048);
  EXPECT_EQ(c.scheduler.prefill_chunk_tokens, 256);
  EXPECT_EQ(c.scheduler.threads, 8);
  EXPECT_EQ(c.scheduler.kv_cache_bytes, int64_t{2} << 30);
  EXPECT_EQ(c.scheduler.aging_s, 2.5);
  EXPECT_FALSE(c.scheduler.prefix_cache);
  EXPECT_EQ(c.scheduler.block_size, 32);
  EXPECT_TRUE(c.cache.share_prefix_across_tenants);
  EXPECT_FALSE(c.response.streaming);
  EXPECT_FALSE(c.response.cancel_on_disconnect);
  EXPECT_EQ(c.server.host, "0.0.0.0");
  EXPECT_EQ(c.server.port, 0);
  EXPECT_EQ(c.server.http_threads, 4);
  EXPECT_EQ(c.server.max_body_bytes, 1 << 20);
  EXPECT_EQ(c.server.request_timeout_s, 5);
  EXPECT_EQ(c.server.idle_timeout_s, 0.5);
  EXPECT_EQ(c.server.max_connections, 100);
  EXPECT_EQ(c.server.drain_grace_s, 0);
  EXPECT_TRUE(c.server.metrics_require_key);
  EXPECT_EQ(c.server.unknown_request_fields, "ignore");
  EXPECT_EQ(c.limits.max_tokens, 8192);
  EXPECT_EQ(c.limits.default_max_tokens, 8192);
  EXPECT_EQ(c.limits.max_n, 1);
  EXPECT_EQ(c.scheduler.max_waiting[0], 10);
  EXPECT_EQ(c.scheduler.max_waiting[1], 20);
  EXPECT_EQ(c.limits.default_timeout_s, 30);
  EXPECT_EQ(c.limits.max_timeout_s, 30);
  EXPECT_EQ(c.limits.max_stop_strings, 0);
  EXPECT_EQ(c.limits.max_prompts_per_request, 3);
  EXPECT_EQ(c.logging.level, "debug");
  EXPECT_EQ(c.logging.format, "json");
  EXPECT_FALSE(c.logging.access_log);
  EXPECT_EQ(c.logging.access_log_path, "/var/log/brisk.jsonl");
  ASSERT_EQ(c.keys.size(), 2u);
  EXPECT_EQ(c.keys[0], (ApiKeyConfig{"sk-abc", "acme", "search", "acme"}));
  EXPECT_EQ(c.keys[1], (ApiKeyConfig{"sk-from-env", "globex", "", "globex", true}));
  EXPECT_EQ(c.model.reasoning, "markers");
  EXPECT_EQ(c.model.reasoning_start, "<reason>");
  EXPECT_EQ(c.model.reasoning_end, "</reason>");
  unsetenv("BRISK_TEST_KEY_ENV");
}

TEST(ConfigTest, UnknownKey) {
  EXPECT_EQ(ErrorOf("model: {precision: fp8}\n"
                    "# a comment\n"
                    "scheduler: {max_batch_tokenz: 16}\n"),
            "inference.yaml:3: unknown key 'max_batch_tokenz' in 'scheduler' (allowed: "
            "continuous_batching, max_concurrent_sequences, max_batch_tokens, "
            "prefill_chunk_tokens, threads, kv_cache_bytes, aging_seconds, fair_share, "
            "grammar_mask_overlap); did you mean "
            "'max_batch_tokens'?");
  EXPECT_EQ(ErrorOf("server:\n  host: x\n  colour: blue\n"),
            "inference.yaml:3: unknown key 'colour' in 'server' (allowed: host, port, "
            "http_threads, max_body_bytes, request_timeout_s, idle_timeout_s, max_connections, "
            "drain_grace_s, metrics_require_key, unknown_request_fields, model_names)");
  EXPECT_EQ(ErrorOf("modle: {}\n"),
            "inference.yaml:1: unknown top-level key 'modle' (allowed: model, scheduler, cache, "
            "response, server, limits, speculative, logging, keys); did you mean 'model'?");
  // A key in the wrong place points at where it belongs.
  EXPECT_THAT(ErrorOf("port: 8000\n"), HasSubstr("; 'port' belongs in 'server'"));
  EXPECT_THAT(ErrorOf("scheduler: {prefix_cache: true}\n"),
              HasSubstr("inference.yaml:1: unknown key 'prefix_cache' in 'scheduler'"));
  EXPECT_THAT(ErrorOf("scheduler: {prefix_cache: true}\n"), HasSubstr("belongs in 'cache'"));
}

TEST(ConfigTest, Logging) {
  const InferenceConfig defaults;
  EXPECT_EQ(defaults.logging.level, "info");
  EXPECT_EQ(defaults.logging.format, "text");
  EXPECT_TRUE(defaults.logging.access_log);
  EXPECT_EQ(defaults.logging.access_log_path, "-");
  EXPECT_EQ(Parse("logging:\n"), defaults);

  for (const char* level : {"trace", "debug", "info", "warn", "error", "off"}) {
    EXPECT_EQ(Parse(fmt::format("logging: {{level: {}}}\n", level)).logging.level, level);
  }
  InferenceConfig c =
      Parse("logging:\n  format: json\n  access_log: true\n  access_log_path: stderr\n");
  EXPECT_EQ(c.logging.format, "json");
  EXPECT_TRUE(c.logging.access_log);
  EXPECT_EQ(c.logging.access_log_path, "stderr");
  EXPECT_EQ(Parse("logging: {access_log_path: 'logs/access log.jsonl'}\n").logging.access_log_path,
            "logs/access log.jsonl");

  EXPECT_EQ(ErrorOf("logging:\n  level: verbose\n"),
            "inference.yaml:2: logging.level: 'verbose' is not one of trace, debug, info, warn, "
            "error, off");
  EXPECT_EQ(ErrorOf("logging: {format: xml}\n"),
            "inference.yaml:1: logging.format: 'xml' is not one of text, json");
  EXPECT_EQ(ErrorOf("logging: {level: WARN}\n"),
            "inference.yaml:1: logging.level: 'WARN' is not one of trace, debug, info, warn, "
            "error, off");
  EXPECT_EQ(ErrorOf("logging: {access_log: yes}\n"),
            "inference.yaml:1: logging.access_log: expected true or false, got 'yes'");
  EXPECT_EQ(ErrorOf("logging: {access_log_path: ''}\n"),
            "inference.yaml:1: logging.access_log_path: expected a non-empty string, got ''");
  EXPECT_EQ(ErrorOf("logging:\n  access_log_path:\n"),
            "inference.yaml:2: logging.access_log_path: expected a non-empty string, got nothing");
  EXPECT_EQ(ErrorOf("logging: {level: [info]}\n"),
            "inference.yaml:1: logging.level: expected one of trace, debug, info, warn, error, "
            "off, got a sequence");
  // Unknown keys stay errors, with the usual hints.
  EXPECT_EQ(ErrorOf("logging:\n  level: info\n  acces_log: false\n"),
            "inference.yaml:3: unknown key 'acces_log' in 'logging' (allowed: level, format, "
            "access_log, access_log_path, otlp_endpoint); did you mean 'access_log'?");
  EXPECT_THAT(ErrorOf("logging: {port: 1}\n"), HasSubstr("; 'port' belongs in 'server'"));
  EXPECT_THAT(ErrorOf("server: {access_log: false}\n"), HasSubstr("belongs in 'logging'"));
  EXPECT_THAT(ErrorOf("logging: info\n"),
              HasSubstr("inference.yaml:1: logging: expected a map with keys level, format, "
                        "access_log, access_log_path, otlp_endpoint, got 'info'"));
  EXPECT_EQ(Parse("logging: {otlp_endpoint: \"http://127.0.0.1:4318\"}\n").logging.otlp_endpoint,
            "http://127.0.0.1:4318");
  EXPECT_EQ(Parse("").logging.otlp_endpoint, "");
}

TEST(ConfigTest, UnknownRequestFieldsMode) {
  EXPECT_EQ(Parse("").server.unknown_request_fields, "reject");
  EXPECT_EQ(Parse("server: {unknown_request_fields: reject}\n").server.unknown_request_fields,
            "reject");
  EXPECT_EQ(ErrorOf("server:\n  unknown_request_fields: allow\n"),
            "inference.yaml:2: server.unknown_request_fields: 'allow' is not one of reject, "
            "ignore");
  // The mode is about request bodies: unknown keys in this file stay errors.
  EXPECT_THAT(ErrorOf("server: {unknown_request_fieldz: ignore}\n"),
              HasSubstr("unknown key 'unknown_request_fieldz' in 'server'"));
}

TEST(ConfigTest, PrecisionMustBeKnown) {
  EXPECT_EQ(ErrorOf("# profile\nmodel: {precision: fp9}\n"),
            "inference.yaml:2: model.precision: 'fp9' is not one of native, f32, f16, bf16, "
            "q8_0, q4_0, int8, int4, fp8, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, "
            "iq4_xs");
  // The loader accepts every listed name, implemented or not.
  for (std::string_view p : PrecisionNames()) {
    EXPECT_EQ(Parse(fmt::format("model: {{precision: {}}}\n", p)).model.precision, p);
  }
  EXPECT_THAT(ErrorOf("model: {precision: FP8}\n"), HasSubstr("'FP8' is not one of"));
  EXPECT_THAT(ErrorOf("model:\n  precision:\n"),
              HasSubstr("inference.yaml:2: model.precision: expected one of native, f32"));
}

TEST(ConfigTest, KvPrecisionMustBeKnown) {
  EXPECT_EQ(Parse("").cache.kv_precision, "f16");
  EXPECT_EQ(ErrorOf("cache: {kv_precision: int4}\n"),
            "inference.yaml:1: cache.kv_precision: 'int4' is not one of f16, f32, bf16, int8, fp8");
  // The config's list and the cache's are the same names.
  for (std::string_view p : KvPrecisionConfigNames()) {
    EXPECT_EQ(Parse(fmt::format("cache: {{kv_precision: {}}}\n", p)).cache.kv_precision, p);
    EXPECT_TRUE(ParseKvPrecision(std::string(p)).ok()) << p;
  }
  EXPECT_EQ(KvPrecisionConfigNames().size(), KvPrecisionNames().size());
}

TEST(ConfigTest, Integers) {
  EXPECT_EQ(ErrorOf("\n\n\nscheduler: {max_batch_tokens: lots}\n"),
            "inference.yaml:4: scheduler.max_batch_tokens: expected a positive integer, got "
            "'lots'");
  EXPECT_EQ(ErrorOf("scheduler: {max_batch_tokens: 0}\n"),
            "inference.yaml:1: scheduler.max_batch_tokens: expected a positive integer, got '0'");
  EXPECT_EQ(ErrorOf("scheduler: {max_batch_tokens: 12.5}\n"),
            "inference.yaml:1: scheduler.max_batch_tokens: expected a positive integer, got "
            "'12.5'");
  EXPECT_EQ(ErrorOf("server:\n  port: 70000\n"),
            "inference.yaml:2: server.port: expected a non-negative integer no larger than "
            "65535, got '70000'");
  EXPECT_EQ(ErrorOf("server: {port: -1}\n"),
            "inference.yaml:1: server.port: expected a non-negative integer, got '-1'");
  EXPECT_EQ(ErrorOf("server:\n  port:\n"),
            "inference.yaml:2: server.port: expected a non-negative integer, got nothing");
  EXPECT_THAT(ErrorOf("scheduler: {max_batch_tokens: 99999999999999999999}\n"),
              HasSubstr("expected a positive integer, got '99999999999999999999'"));
  EXPECT_THAT(ErrorOf("limits: {max_n: 0}\n"), HasSubstr("limits.max_n: expected a positive"));
  EXPECT_THAT(ErrorOf("scheduler: {max_concurrent_sequences: 0}\n"),
              HasSubstr("scheduler.max_concurrent_sequences"));
  EXPECT_THAT(ErrorOf("scheduler: {threads: -2}\n"), HasSubstr("non-negative"));
  EXPECT_THAT(ErrorOf("model: {max_context_tokens: -1}\n"), HasSubstr("model.max_context_tokens"));
  EXPECT_EQ(Parse("server: {port: 65535}\n").server.port, 65535);
  EXPECT_EQ(Parse("server: {port: \"8080\"}\n").server.port, 8080);  // quoting is harmless
}

TEST(ConfigTest, Seconds) {
  EXPECT_EQ(ErrorOf("server: {request_timeout_s: 10s}\n"),
            "inference.yaml:1: server.request_timeout_s: expected a positive number of seconds, "
            "got '10s'");
  EXPECT_THAT(ErrorOf("server: {idle_timeout_s: 0}\n"), HasSubstr("positive number of seconds"));
  EXPECT_THAT(ErrorOf("scheduler: {aging_seconds: -1}\n"),
              HasSubstr("expected a non-negative number of seconds, got '-1'"));
  EXPECT_THAT(ErrorOf("scheduler: {aging_seconds: .inf}\n"), HasSubstr("got '.inf'"));
  EXPECT_THAT(ErrorOf("scheduler: {aging_seconds: nan}\n"), HasSubstr("got 'nan'"));
  EXPECT_EQ(Parse("scheduler: {aging_seconds: 0}\n").scheduler.aging_s, 0);
  EXPECT_EQ(Parse("scheduler: {aging_seconds: 1e-3}\n").scheduler.aging_s, 0.001);
}

TEST(ConfigTest, WrongType) {
  EXPECT_EQ(ErrorOf("scheduler:\n  max_batch_tokens: {a: 1}\n"),
            "inference.yaml:2: scheduler.max_batch_tokens: expected a positive integer, got a "
            "map");
  EXPECT_EQ(ErrorOf("model:\n  path: [a, b]\n"),
            "inference.yaml:2: model.path: expected a string, got a sequence");
  EXPECT_EQ(ErrorOf("cache: true\n"),
            "inference.yaml:1: cache: expected a map with keys kv_cache, prefix_cache, "
            "block_size, kv_precision, share_prefix_across_tenants, disk_path, disk_bytes, "
            "kv_events, got 'true'");
  EXPECT_THAT(ErrorOf("server: [1, 2]\n"), HasSubstr("server: expected a map"));
  EXPECT_THAT(ErrorOf("server: {host: {a: b}}\n"),
              HasSubstr("server.host: expected a non-empty string, got a map"));
  EXPECT_THAT(ErrorOf("server: {host: ''}\n"), HasSubstr("server.host: expected a non-empty"));
  EXPECT_THAT(ErrorOf("{[a, b]: 1}\n"), HasSubstr("keys in the top level must be plain names"));
}

TEST(ConfigTest, Bools) {
  for (const char* bad : {"yes", "no", "on", "off", "1", "0", "y", "tru"}) {
    EXPECT_EQ(
        ErrorOf(fmt::format("cache:\n  kv_cache: {}\n", bad)),
        fmt::format("inference.yaml:2: cache.kv_cache: expected true or false, got '{}'", bad));
  }
  EXPECT_THAT(ErrorOf("response: {streaming: [true]}\n"),
              HasSubstr("response.streaming: expected true or false, got a sequence"));
  EXPECT_FALSE(Parse("response: {streaming: False}\n").response.streaming);
  EXPECT_TRUE(Parse("response: {streaming: TRUE}\n").response.streaming);
}

TEST(ConfigTest, BlockSizeIsAPowerOfTwo) {
  for (int ok : {1, 2, 16, 64, 256}) {
    EXPECT_EQ(Parse(fmt::format("cache: {{block_size: {}}}\n", ok)).scheduler.block_size, ok);
  }
  for (const char* bad : {"0", "24", "512", "-16", "x"}) {
    EXPECT_EQ(ErrorOf(fmt::format("cache: {{block_size: {}}}\n", bad)),
              fmt::format("inference.yaml:1: cache.block_size: expected a power of two in "
                          "1..256, got '{}'",
                          bad));
  }
}

TEST(ConfigTest, ByteSizes) {
  struct Case {
    const char* text;
    int64_t bytes;
  };
  for (const Case& c : std::initializer_list<Case>{{"4194304", 4194304},
                                                   {"512MiB", int64_t{512} << 20},
                                                   {"2GiB", int64_t{2} << 30},
                                                   {"2 GiB", int64_t{2} << 30},
                                                   {"1.5GB", 1500000000},
                                                   {"1.5KiB", 1536},
                                                   {"64k", 64000},
                                                   {"4Gi", int64_t{4} << 30},
                                                   {"10mb", 10000000},
                                                   {"7B", 7},
                                                   {"1TiB", int64_t{1} << 40}}) {
    Expected<int64_t> b = ParseByteSize(c.text);
    ASSERT_TRUE(b.ok()) << c.text << ": " << b.status().ToString();
    EXPECT_EQ(*b, c.bytes) << c.text;
  }
  for (const char* bad :
       {"", "lots", "-1", "0", "0.1B", "5 parsecs", "1..5GB", "GiB", "1e9", "99999999999TiB"}) {
    EXPECT_FALSE(ParseByteSize(bad).ok()) << bad;
  }
  EXPECT_EQ(Parse("scheduler: {kv_cache_bytes: 1.5GB}\n").scheduler.kv_cache_bytes, 1500000000);
  EXPECT_EQ(Parse("scheduler: {kv_cache_bytes: 1048576}\n").scheduler.kv_cache_bytes, 1 << 20);
  EXPECT_EQ(Parse("server: {max_body_bytes: \"8 MiB\"}\n").server.max_body_bytes, 8 << 20);
  EXPECT_EQ(ErrorOf("scheduler:\n  kv_cache_bytes: lots\n"),
            "inference.yaml:2: scheduler.kv_cache_bytes: expected a size in bytes like "
            "536870912, 512MiB or 1.5GB, got 'lots'");
  EXPECT_THAT(ErrorOf("scheduler: {kv_cache_bytes: 0}\n"), HasSubstr("at least 1 byte"));
  EXPECT_THAT(ErrorOf("server: {max_body_bytes: 2GiB}\n"),
              HasSubstr("server.max_body_bytes: 2147483648 bytes is more than the limit"));
  EXPECT_THAT(ErrorOf("scheduler: {kv_cache_bytes: {a: 1}}\n"), HasSubstr("got a map"));
}

TEST(ConfigTest, DuplicateKeys) {
  EXPECT_EQ(ErrorOf("server:\n  port: 1\n  host: h\n  port: 2\n"),
            "inference.yaml:4: duplicate key 'port' in 'server' (first at line 2)");
  EXPECT_EQ(ErrorOf("model: {precision: f32}\nscheduler: {}\nmodel: {precision: f16}\n"),
            "inference.yaml:3: duplicate key 'model' in the top level (first at line 1)");
  EXPECT_THAT(ErrorOf("cache: {kv_cache: true, kv_cache: false}\n"),
              HasSubstr("inference.yaml:1: duplicate key 'kv_cache' in 'cache'"));
  EXPECT_THAT(ErrorOf("keys:\n  - {key: a, tenant: t, tenant: u}\n"),
              HasSubstr("inference.yaml:2: duplicate key 'tenant' in 'keys[0]'"));
}

TEST(ConfigTest, SyntaxErrorsNameTheLine) {
  EXPECT_THAT(ErrorOf("model: {precision: fp8}\nscheduler: {max_batch_tokens: 8\n"),
              HasSubstr("inference.yaml:"));
  EXPECT_EQ(ErrorOf("model:\n  precision: a: b\n"),
            "inference.yaml:2: YAML syntax error at column 15: illegal map value");
  EXPECT_THAT(ErrorOf("server:\n  port: 1\n host: x\n"),
              HasSubstr("inference.yaml:3: YAML syntax error"));
  EXPECT_THAT(ErrorOf("a: [1,\n"), HasSubstr("inference.yaml:2: YAML syntax error"));
  EXPECT_EQ(ErrorOf("model: {}\n\tserver: {}\n"),
            "inference.yaml:2: YAML syntax error: a tab is used for indentation; YAML indents "
            "with spaces");
}

TEST(ConfigTest, TopLevelMustBeAMap) {
  EXPECT_EQ(ErrorOf("- model\n- scheduler\n"),
            "inference.yaml:1: top level: expected a map with keys model, scheduler, cache, "
            "response, server, limits, speculative, logging, keys, got a sequence");
  EXPECT_THAT(ErrorOf("just words\n"), HasSubstr("top level: expected a map"));
  EXPECT_THAT(ErrorOf("model: {}\n---\nserver: {}\n"),
              HasSubstr("inference.yaml:2: only one YAML document is allowed"));
  // Inputs yaml-cpp's LoadAll looped forever on (found by fuzzing): an error
  // now, at once.
  EXPECT_THAT(ErrorOf(",-"), HasSubstr("inference.yaml:1:"));
  EXPECT_THAT(ErrorOf("\n,\x04"), HasSubstr("inference.yaml:2: control character 0x04"));
}

TEST(ConfigTest, ApiKeys) {
  EXPECT_EQ(ErrorOf("keys:\n  - {key: sk-1, tenant: a}\n  - {key: sk-2}\n"),
            "inference.yaml:3: keys[1]: missing 'tenant' (every API key belongs to a tenant)");
  const std::string dup = ErrorOf(
      "keys:\n  - {key: sk-secret-1, tenant: a}\n  - {key: sk-2, tenant: b}\n"
      "  - key: sk-secret-1\n    tenant: c\n");
  EXPECT_EQ(dup, "inference.yaml:4: keys[2]: duplicate API key (same as keys[0] at line 2)");
  EXPECT_THAT(dup, Not(HasSubstr("sk-secret")));  // keys are secrets
  EXPECT_THAT(ErrorOf("keys:\n  - {tenant: a}\n"),
              HasSubstr("inference.yaml:2: keys[0]: missing 'key' (or 'key_env'"));
  EXPECT_THAT(ErrorOf("keys:\n  - {key: k, key_env: K, tenant: a}\n"),
              HasSubstr("keys[0]: set only one of 'key' and 'key_env'"));
  EXPECT_THAT(ErrorOf("keys:\n  - {key: 'has space', tenant: a}\n"),
              HasSubstr("inference.yaml:2: keys[0].key: expected a non-empty token"));
  EXPECT_THAT(ErrorOf("keys:\n  - {key: k, tenant: ''}\n"),
              HasSubstr("keys[0].tenant: expected a non-empty string"));
  EXPECT_THAT(ErrorOf("keys:\n  - {key: k, tenant: a, tier: gold}\n"),
              HasSubstr("unknown key 'tier' in 'keys[0]' (allowed: key, key_env, tenant, "
                        "feature, name, role)"));
  EXPECT_THAT(ErrorOf("model: {reasoning: [\"<a>\"]}\n"),
              HasSubstr("model.reasoning: expected auto, off or [start marker, end marker]"));
  EXPECT_THAT(ErrorOf("keys:\n  - {key: k, tenant: a, role: root}\n"),
              HasSubstr("inference.yaml:2: keys[0].role: expected user or admin"));
  EXPECT_THAT(ErrorOf("keys: {key: k, tenant: a}\n"),
              HasSubstr("inference.yaml:1: keys: expected a sequence"));
  EXPECT_THAT(ErrorOf("keys:\n  - sk-1\n"),
              HasSubstr("inference.yaml:2: keys[0]: expected a map with keys key (or key_env)"));
  unsetenv("BRISK_TEST_UNSET_VAR");
  EXPECT_EQ(ErrorOf("keys:\n  - tenant: a\n    key_env: BRISK_TEST_UNSET_VAR\n"),
            "inference.yaml:3: keys[0].key_env: environment variable 'BRISK_TEST_UNSET_VAR' is "
            "not set");
  setenv("BRISK_TEST_DUP_KEY", "sk-1", 1);
  EXPECT_THAT(ErrorOf("keys:\n  - {key: sk-1, tenant: a}\n"
                      "  - {key_env: BRISK_TEST_DUP_KEY, tenant: b}\n"),
              HasSubstr("keys[1]: duplicate API key"));
  unsetenv("BRISK_TEST_DUP_KEY");
  EXPECT_TRUE(Parse("keys: []\n").keys.empty());
  EXPECT_TRUE(Parse("keys:\n").keys.empty());
}

TEST(ConfigTest, CrossKeyChecks) {
  EXPECT_EQ(ErrorOf("scheduler:\n  prefill_chunk_tokens: 1024\n"),
            "inference.yaml:2: scheduler.prefill_chunk_tokens (1024) must not exceed "
            "scheduler.max_batch_tokens (512)");
  EXPECT_THAT(ErrorOf("cache:\n  kv_cache: false\n"),
              HasSubstr("inference.yaml:2: cache.prefix_cache: true needs cache.kv_cache: true"));
  EXPECT_TRUE(Parse("cache: {kv_cache: false, prefix_cache: false}\n").cache.kv_cache == false);
  EXPECT_THAT(ErrorOf("limits:\n  max_tokens: 100\n"),
              HasSubstr("inference.yaml:2: limits.default_max_tokens (256) must not exceed "
                        "limits.max_tokens (100)"));
  EXPECT_THAT(ErrorOf("limits:\n  max_timeout_s: 60\n"),
              HasSubstr("limits.default_timeout_s (600) must not exceed limits.max_timeout_s"));
}

// The example files at the repository root parse, and every value not in
// the seeds' four lines is the default, so the comments cannot drift.
TEST(ConfigTest, RepositoryExamples) {
  Expected<InferenceConfig> prod = LoadInferenceConfig(BRISK_SOURCE_DIR "/inference.yaml");
  ASSERT_TRUE(prod.ok()) << prod.status().ToString();
  EXPECT_EQ(*prod, SeedsExpected());

  Expected<InferenceConfig> local = LoadInferenceConfig(BRISK_SOURCE_DIR "/inference.local.yaml");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  InferenceConfig want = SeedsExpected();
  want.model.precision = "native";
  want.model.max_context_tokens = 8192;
  EXPECT_EQ(*local, want);

  // The example starts with the seeds' lines verbatim.
  std::ifstream in(BRISK_SOURCE_DIR "/inference.yaml");
  std::string head(sizeof(kSeedsFlow) - 1, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  EXPECT_EQ(head, kSeedsFlow);

  // Uncommenting the keys example gives a valid config too.
  std::ifstream again(BRISK_SOURCE_DIR "/inference.yaml");
  std::string text((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  size_t at = text.find("#keys:");
  ASSERT_NE(at, std::string::npos);
  std::string uncommented = text.substr(0, at);
  std::istringstream rest(text.substr(at));
  setenv("BRISK_API_KEY_GLOBEX", "sk-globex-example", 1);
  for (std::string line; std::getline(rest, line);) {
    if (line.starts_with("#")) line.erase(0, 1);
    uncommented += line + "\n";
  }
  Expected<InferenceConfig> with_keys = ParseInferenceConfig(uncommented, "uncommented");
  ASSERT_TRUE(with_keys.ok()) << with_keys.status().ToString() << "\n" << uncommented;
  EXPECT_EQ(with_keys->keys.size(), 2u);
  unsetenv("BRISK_API_KEY_GLOBEX");
}

TEST(ConfigTest, LoadErrors) {
  Expected<InferenceConfig> missing = LoadInferenceConfig("/nonexistent/dir/inference.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/dir/inference.yaml"));

  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("brisk_config_test_{}", static_cast<long>(getpid()));
  std::filesystem::create_directories(dir);
  Expected<InferenceConfig> is_dir = LoadInferenceConfig(dir.string());
  ASSERT_FALSE(is_dir.ok());
  EXPECT_THAT(is_dir.status().message(), HasSubstr("is a directory"));

  const std::string path = (dir / "inference.yaml").string();
  std::ofstream(path) << "server:\n  port: 9001\n  bogus: 1\n";
  Expected<InferenceConfig> bad = LoadInferenceConfig(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr(path + ":3: unknown key 'bogus' in 'server'"));
  std::ofstream(path) << "server:\n  port: 9001\n";
  Expected<InferenceConfig> good = LoadInferenceConfig(path);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->server.port, 9001);
  if (geteuid() != 0) {  // root reads anything
    std::filesystem::permissions(path, std::filesystem::perms::none);
    Expected<InferenceConfig> unreadable = LoadInferenceConfig(path);
    ASSERT_FALSE(unreadable.ok());
    EXPECT_THAT(unreadable.status().message(), HasSubstr("cannot read"));
  }
  std::filesystem::remove_all(dir);
}

// Whatever the bytes, the parser returns a value or a Status: nothing throws
// and nothing crashes.
TEST(ConfigTest, GarbageNeverThrows) {
  std::ifstream in(BRISK_SOURCE_DIR "/inference.yaml");
  std::string base((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(base.empty());
  std::mt19937 rng(42);
  const std::string alphabet = "{}[]:,-#&*!|>'\"%@` \n\t0123456789abcxyz~.?<";
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text = base;
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % (text.size() + 1);
      switch (rng() % 3) {
        case 0: text.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
        case 1:
          if (pos < text.size()) text.erase(pos, 1 + rng() % 8);
          break;
        default:
          if (pos < text.size()) text[pos] = alphabet[rng() % alphabet.size()];
      }
    }
    Expected<InferenceConfig> c = ParseInferenceConfig(text, kFile);
    if (!c.ok()) {
      EXPECT_THAT(c.status().message(), HasSubstr("inference.yaml"));
    }
  }
  // Deep nesting and alias bombs stay bounded.
  EXPECT_FALSE(ParseInferenceConfig(std::string(100000, '['), kFile).ok());
  EXPECT_FALSE(ParseInferenceConfig("a: &a [x]\nb: *a\nc: *zz\n", kFile).ok());
}

}  // namespace
}  // namespace brisk
