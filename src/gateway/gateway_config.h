// gateway.yaml: what `brisk gateway` serves and how it routes (tiers of
// upstreams with prices, routing by model / feature / rule / cascade, replica
// choice, the cost ledger, budgets, API keys). docs/gateway.md describes every
// key; the loader reports the first problem as "file:line: what is wrong".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/inference_config.h"
#include "gateway/cost.h"
#include "util/status.h"

namespace brisk::gateway {

struct UpstreamConfig {
  std::string url;             // http://host:port[/base]
  std::string type = "brisk";  // "brisk" (a `brisk serve`) | "openai" (any OpenAI-compatible)
  std::string api_key;         // sent upstream as a bearer token ("" = none); key or key_env
  // Its engine's KV events (precise prefix routing; gateway/kv_event_subscriber.h):
  // the engine's cache.kv_events endpoint and replay_endpoint as this host
  // reaches them ("" = none), and its topic.
  std::string kv_events;         // tcp://host:5557
  std::string kv_events_replay;  // tcp://host:5558
  std::string kv_events_topic;
  bool operator==(const UpstreamConfig&) const = default;
};

struct TierConfig {
  std::string name;   // "small", "medium", "large", ...
  std::string model;  // model id sent upstream; "" = the first id of the upstream's /v1/models
  Prices prices;      // USD per million tokens
  std::vector<UpstreamConfig> upstreams;
  bool operator==(const TierConfig&) const = default;
};

// A routing rule: every condition set must hold; the first matching rule wins.
struct RuleConfig {
  std::string route;              // a tier name or "cascade"
  int64_t min_prompt_chars = -1;  // -1 = no condition
  int64_t max_prompt_chars = -1;
  int has_tools = -1;                 // -1 = any, 0 = must not have, 1 = must have
  int has_response_format = -1;       // response_format json_object / json_schema
  std::string regex;                  // PCRE2, searched in the prompt text; "" = none
  std::vector<std::string> features;  // empty = any feature
  bool operator==(const RuleConfig&) const = default;
};

struct CascadeConfig {
  std::vector<std::string> tiers;  // cheapest first; empty = no cascade
  // Escalate when the answer's mean token logprob is below this; 0 = never
  // (set by `brisk gateway calibrate`).
  double min_mean_logprob = 0;
  bool escalate_on_invalid_json = true;  // response_format answers that fail their schema
  bool operator==(const CascadeConfig&) const = default;
};

struct BudgetConfig {
  std::string key;         // an API key's name, or
  std::string feature;     // a feature (exactly one of the two)
  double daily_usd = 0;    // 0 = no daily limit
  double monthly_usd = 0;  // 0 = no monthly limit
  bool operator==(const BudgetConfig&) const = default;
};

struct GatewayConfig {
  struct Server : ListenerConfig {
    Server() {
      port = 8080;
      http_threads = 2;
    }
  } server;
  std::vector<TierConfig> tiers;
  struct Routing {
    // Where a request goes when neither model, feature nor rule decides: a
    // tier name or "cascade". "" = the first tier.
    std::string default_route;
    std::map<std::string, std::string> features;  // feature -> tier name or "cascade"
    std::vector<RuleConfig> rules;
    CascadeConfig cascade;
    bool operator==(const Routing&) const = default;
  } routing;
  struct Replicas {
    std::string policy = "least_loaded";  // least_loaded | round_robin
    bool prefix_affinity = true;
    int affinity_prefix_bytes = 1024;  // prompt bytes hashed for affinity
    double load_factor = 1.25;
    double health_interval_s = 1;
    int eject_after_failures = 3;
    double eject_s = 5;
    int max_attempts = 3;  // per tier: the first try plus retries on other replicas
    double connect_timeout_s = 2;
    // Precise prefix routing, for tiers whose upstreams name their KV events.
    bool prefix_routing = true;
    int64_t prefix_index_blocks = 262144;  // block keys the index keeps per tier
    int64_t queued_request_tokens = 256;   // a request in flight, in prompt tokens to compute
    double block_hashes_timeout_s = 0.5;   // asking an engine for the prompt's block hashes
    bool operator==(const Replicas&) const = default;
  } replicas;
  struct Ledger {
    std::string url = "brisk-ledger.db";  // SQLite path/URL or postgresql://...
    std::string url_env;  // or the environment variable holding it (a Kubernetes Secret)
    // How many gateways share this ledger's state (budgets, rollouts, stored responses):
    // more than one requires a postgresql:// URL (GatewayServer::Start says so).
    int gateways = 1;
    // Rows of completed requests while the database is away (ledger.h OpenLedger).
    std::string spool_path = "brisk-ledger.spool.jsonl";
    bool operator==(const Ledger&) const = default;
  } ledger;
  std::vector<BudgetConfig> budgets;
  // `budgets:` as a map: {limits: [...], on_store_outage, reservation_ttl_s}.
  struct BudgetPolicy {
    // When the database is unreachable at admission: allow (admit unchecked, settle
    // later) or refuse (503 budget_store_unavailable).
    std::string on_store_outage = "allow";
    double reservation_ttl_s = 600;  // a reservation never settled (its gateway died) expires
    bool operator==(const BudgetPolicy&) const = default;
  } budget_policy;
  // The Responses API's stored objects (store: true), in the ledger's
  // database, per tenant (gateway/shared_responses.h).
  struct Responses {
    int64_t max_entries = 1024;
    int64_t max_bytes = int64_t{64} << 20;
    double ttl_s = 24 * 3600;
    bool operator==(const Responses&) const = default;
  } responses;
  // Rollouts of candidate upstream sets (gateway/rollout_manager.h).
  struct Rollout {
    std::string admin_key;      // bearer token of the admin API; "" = the API is off
    std::string admin_key_env;  // or the environment variable holding it
    std::string audit_log;      // JSON lines, appended; "" = the log and GET /admin/audit only
    std::string judge_tier;     // whose first replica judges shadow pairs; "" = the last tier
    double tick_s = 0.25;       // how often stage timers are looked at
    bool operator==(const Rollout&) const = default;
  } rollout;
  InferenceConfig::Logging logging;
  std::vector<ApiKeyConfig> keys;  // empty = no authentication
  bool operator==(const GatewayConfig&) const = default;
};

// Parses a gateway.yaml document; `filename` is only used in messages.
Expected<GatewayConfig> ParseGatewayConfig(std::string_view yaml_text, std::string_view filename);
Expected<GatewayConfig> LoadGatewayConfig(const std::string& path);

// Index of the tier named `name`, or -1.
int FindTier(const GatewayConfig& config, std::string_view name);

}  // namespace brisk::gateway
