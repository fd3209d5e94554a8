// inference.yaml's cache.disk_path and cache.disk_bytes: the disk tier under
// the prefix cache (engine/kv_disk_tier.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/inference_config.h"
#include "config/inference_config_test_util.h"

namespace brisk {
namespace {

using config_test::ErrorOf;
using config_test::Parse;
using ::testing::HasSubstr;

TEST(KvDiskConfigTest, OffByDefaultKeysAndTheirErrors) {
  const InferenceConfig off = Parse("");
  EXPECT_EQ(off.cache.disk_path, "");
  EXPECT_EQ(off.cache.disk_bytes, int64_t{10} << 30);
  const InferenceConfig c = Parse("cache:\n  disk_path: /var/cache/brisk/kv\n  disk_bytes: 2GiB\n");
  EXPECT_EQ(c.cache.disk_path, "/var/cache/brisk/kv");
  EXPECT_EQ(c.cache.disk_bytes, int64_t{2} << 30);
  EXPECT_EQ(Parse("cache:\n  disk_bytes: 1048576\n").cache.disk_bytes, 1 << 20);

  EXPECT_THAT(ErrorOf("cache:\n  disk_bytes: lots\n"),
              HasSubstr("inference.yaml:2: cache.disk_bytes"));
  EXPECT_THAT(ErrorOf("cache:\n  disk_path: [a, b]\n"),
              HasSubstr("cache.disk_path: expected a string"));
  EXPECT_THAT(ErrorOf("cache:\n  disk_path: /tmp/kv\n  disk_bytes: 1000\n"),
              HasSubstr("cache.disk_bytes (1000) must be at least 1048576"));
  // A small disk_bytes alone is harmless: no tier, nothing to bound.
  EXPECT_EQ(Parse("cache:\n  disk_bytes: 1000\n").cache.disk_bytes, 1000);
  EXPECT_THAT(ErrorOf("cache:\n  prefix_cache: false\n  disk_path: /tmp/kv\n"),
              HasSubstr("cache.disk_path is a tier under the prefix cache: it needs "
                        "cache.prefix_cache: true"));
}

}  // namespace
}  // namespace brisk
