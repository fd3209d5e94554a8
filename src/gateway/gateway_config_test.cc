#include "gateway/gateway_config.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace brisk::gateway {
namespace {

constexpr const char* kThreeTiers = R"(
server: {port: 0}
tiers:
  - name: small
    model: smollm2
    prices: {input: 0.05, cached_input: 0.01, output: 0.2}
    upstreams: [http://127.0.0.1:9001, http://127.0.0.1:9002]
  - name: medium
    prices: {input: 0.3, output: 1.2}
    upstreams:
      - {url: "http://127.0.0.1:9003", type: openai, api_key: sk-up}
  - name: large
    prices: {input: 3, cached_input: 0.3, output: 15}
    upstreams: [http://127.0.0.1:9004]
routing:
  default: cascade
  features: {classify: small, summarize: medium}
  rules:
    - {route: large, min_prompt_chars: 4000}
    - {route: small, has_response_format: true, regex: "(?i)extract"}
  cascade: {tiers: [small, medium, large], min_mean_logprob: -1.5}
keys:
  - {key: sk-a, tenant: acme, feature: search, name: acme-search}
budgets:
  - {key: acme-search, daily_usd: 5}
  - {feature: summarize, monthly_usd: 100}
ledger: {url: "sqlite:///tmp/x.db"}
)";

TEST(GatewayConfig, ParsesEveryKey) {
  auto c = ParseGatewayConfig(kThreeTiers, "gateway.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->tiers.size(), 3u);
  EXPECT_EQ(c->tiers[0].name, "small");
  EXPECT_EQ(c->tiers[0].model, "smollm2");
  EXPECT_DOUBLE_EQ(c->tiers[0].prices.cached_input_per_mtok, 0.01);
  ASSERT_EQ(c->tiers[0].upstreams.size(), 2u);
  EXPECT_EQ(c->tiers[0].upstreams[1].url, "http://127.0.0.1:9002");
  EXPECT_EQ(c->tiers[0].upstreams[1].type, "brisk");
  EXPECT_EQ(c->tiers[1].upstreams[0].type, "openai");
  EXPECT_EQ(c->tiers[1].upstreams[0].api_key, "sk-up");
  EXPECT_EQ(c->routing.default_route, "cascade");
  EXPECT_EQ(c->routing.features.at("summarize"), "medium");
  ASSERT_EQ(c->routing.rules.size(), 2u);
  EXPECT_EQ(c->routing.rules[0].min_prompt_chars, 4000);
  EXPECT_EQ(c->routing.rules[1].has_response_format, 1);
  EXPECT_EQ(c->routing.rules[1].has_tools, -1);
  EXPECT_EQ(c->routing.cascade.tiers.size(), 3u);
  EXPECT_DOUBLE_EQ(c->routing.cascade.min_mean_logprob, -1.5);
  ASSERT_EQ(c->keys.size(), 1u);
  EXPECT_EQ(c->keys[0].name, "acme-search");
  ASSERT_EQ(c->budgets.size(), 2u);
  EXPECT_DOUBLE_EQ(c->budgets[1].monthly_usd, 100);
  EXPECT_EQ(c->ledger.url, "sqlite:///tmp/x.db");
  EXPECT_EQ(c->server.port, 0);
}

void ExpectError(const std::string& yaml, const std::string& needle) {
  auto c = ParseGatewayConfig(yaml, "g.yaml");
  ASSERT_FALSE(c.ok()) << "accepted:\n" << yaml;
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
  EXPECT_EQ(c.status().message().rfind("g.yaml", 0), 0u) << c.status().message();
}

TEST(GatewayConfig, RejectsWhatCannotWork) {
  ExpectError("", "empty");
  ExpectError("tiers: []\n", "at least one tier");
  ExpectError("tierz: []\n", "tierz");
  ExpectError("tiers:\n  - {name: a, upstreams: []}\n", "at least one upstream");
  ExpectError("tiers:\n  - {name: a, upstreams: [ftp://x]}\n", "http://");
  ExpectError(
      "tiers:\n  - {name: a, upstreams: [http://x:1]}\n  - {name: a, upstreams: [http://x:2]}\n",
      "defined twice");
  ExpectError("tiers:\n  - {name: a, upstreams: [http://x:1], prices: {input: -1}}\n", "dollars");
  ExpectError("tiers:\n  - {name: a, upstreams: [http://x:1], prices: {inptu: 1}}\n", "inptu");
  ExpectError("tiers:\n  - {name: a, upstreams: [http://x:1]}\nrouting: {default: b}\n",
              "unknown tier 'b'");
  ExpectError("tiers:\n  - {name: a, upstreams: [http://x:1]}\nrouting: {default: cascade}\n",
              "cascade.tiers is empty");
  ExpectError("tiers:\n  - {name: a, upstreams: [http://x:1]}\nrouting: {cascade: {tiers: [a]}}\n",
              "at least two tiers");
  ExpectError(
      "tiers:\n  - {name: a, upstreams: [http://x:1]}\nrouting:\n  rules:\n    - {route: a, regex: "
      "\"(\"}\n",
      "regular expression");
  ExpectError("tiers:\n  - {name: a, upstreams: [http://x:1]}\nbudgets:\n  - {daily_usd: 1}\n",
              "exactly one of 'key'");
  ExpectError(
      "tiers:\n  - {name: a, upstreams: [http://x:1]}\nbudgets:\n  - {key: nobody, daily_usd: 1}\n",
      "no API key is named");
  ExpectError("tiers:\n  - {name: a, upstreams: [http://x:1]}\nreplicas: {policy: random}\n",
              "policy");
  ExpectError(
      "tiers:\n  - {name: a, upstreams: [{url: http://x:1, api_key_env: BRISK_NO_SUCH_VAR_X}]}\n",
      "BRISK_NO_SUCH_VAR_X");
}

TEST(GatewayConfig, KvEventsOfUpstreamsAndPrefixRouting) {
  auto c = ParseGatewayConfig(R"(
tiers:
  - name: a
    upstreams:
      - {url: "http://10.0.0.1:8000", kv_events: "tcp://10.0.0.1:5557",
         kv_events_replay: "tcp://10.0.0.1:5558", kv_events_topic: kv}
      - http://10.0.0.2:8000
replicas: {prefix_index_blocks: 1000, queued_request_tokens: 256, block_hashes_timeout_s: 0.2}
)",
                              "g.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const UpstreamConfig& u = c->tiers[0].upstreams[0];
  EXPECT_EQ(u.kv_events, "tcp://10.0.0.1:5557");
  EXPECT_EQ(u.kv_events_replay, "tcp://10.0.0.1:5558");
  EXPECT_EQ(u.kv_events_topic, "kv");
  EXPECT_TRUE(c->tiers[0].upstreams[1].kv_events.empty());
  EXPECT_TRUE(c->replicas.prefix_routing);
  EXPECT_EQ(c->replicas.prefix_index_blocks, 1000);
  EXPECT_EQ(c->replicas.queued_request_tokens, 256);
  EXPECT_DOUBLE_EQ(c->replicas.block_hashes_timeout_s, 0.2);

  ExpectError("tiers:\n  - {name: a, upstreams: [{url: http://x:1, kv_events: x:5557}]}\n",
              "tcp://host:port");
  ExpectError(
      "tiers:\n  - {name: a, upstreams: [{url: http://x:1, kv_events_replay: tcp://x:2}]}\n",
      "needs kv_events");
  ExpectError(
      "tiers:\n  - {name: a, upstreams: [{url: http://x:1, type: openai, kv_events: "
      "tcp://x:2}]}\n",
      "brisk upstream");
}

TEST(GatewayConfig, UpstreamKeyFromEnvironment) {
  setenv("BRISK_GW_TEST_KEY", "sk-from-env", 1);
  auto c = ParseGatewayConfig(
      "tiers:\n  - {name: a, upstreams: [{url: http://x:1, api_key_env: BRISK_GW_TEST_KEY}]}\n",
      "g.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->tiers[0].upstreams[0].api_key, "sk-from-env");
  EXPECT_EQ(FindTier(*c, "a"), 0);
  EXPECT_EQ(FindTier(*c, "b"), -1);
}

}  // namespace
}  // namespace brisk::gateway
