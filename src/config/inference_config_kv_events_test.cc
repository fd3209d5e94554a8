// inference.yaml's cache.kv_events: what `brisk serve` publishes for fleet
// routers (engine/kv_event_publisher.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/inference_config.h"
#include "config/inference_config_test_util.h"

namespace brisk {
namespace {

using config_test::ErrorOf;
using config_test::Parse;
using ::testing::HasSubstr;

TEST(KvEventsConfigTest, DefaultsOffEveryKeyAndItsErrors) {
  const InferenceConfig off = Parse("");
  EXPECT_FALSE(off.cache.kv_events.enabled);
  EXPECT_EQ(off.cache.kv_events.endpoint, "tcp://*:5557");
  EXPECT_EQ(off.cache.kv_events.replay_endpoint, "tcp://*:5558");
  const InferenceConfig c = Parse(
      "cache:\n  kv_events:\n    enabled: true\n    endpoint: tcp://10.0.0.1:6000\n"
      "    replay_endpoint: ''\n    topic: kv@pod-1@smol\n    buffer_steps: 50\n"
      "    hash_seed: '42'\n    int_block_hashes: true\n");
  const auto& k = c.cache.kv_events;
  EXPECT_TRUE(k.enabled);
  EXPECT_EQ(k.endpoint, "tcp://10.0.0.1:6000");
  EXPECT_EQ(k.replay_endpoint, "");
  EXPECT_EQ(k.topic, "kv@pod-1@smol");
  EXPECT_EQ(k.buffer_steps, 50);
  EXPECT_EQ(k.hash_seed, "42");
  EXPECT_TRUE(k.int_block_hashes);
  EXPECT_THAT(ErrorOf("cache:\n  kv_events: {enabled: true, port: 1}\n"),
              HasSubstr("unknown key 'port' in 'cache.kv_events'"));
  EXPECT_THAT(ErrorOf("cache:\n  prefix_cache: false\n  kv_events: {enabled: true}\n"),
              HasSubstr("needs cache.prefix_cache: true"));
}

}  // namespace
}  // namespace brisk
