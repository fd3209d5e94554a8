// inference.yaml's speculative: section (engine/speculator.h).
#include <gtest/gtest.h>

#include <string>

#include "config/inference_config.h"

namespace brisk {
namespace {

TEST(ConfigTest, Speculative) {
  auto c = ParseInferenceConfig(
      "speculative: {method: ngram, num_tokens: 6, ngram_min: 2, ngram_max: 5, max_batch: 4, "
      "min_gain_percent: 10, adaptive: false}\n",
      "inference.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->speculative.method, "ngram");
  EXPECT_EQ(c->speculative.num_tokens, 6);
  EXPECT_EQ(c->speculative.ngram_min, 2);
  EXPECT_EQ(c->speculative.ngram_max, 5);
  EXPECT_EQ(c->speculative.max_batch, 4);
  EXPECT_EQ(c->speculative.min_gain_percent, 10);
  EXPECT_FALSE(c->speculative.adaptive);
  EXPECT_EQ(ParseInferenceConfig("", "x")->speculative.method, "none");  // off by default
  auto d = ParseInferenceConfig("speculative: {method: draft, draft_model: small.gguf}\n", "x");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->speculative.draft_model, "small.gguf");
  for (const char* bad :
       {"speculative: {method: medusa}\n", "speculative: {num_tokens: 0}\n",
        "speculative: {ngram_min: 4, ngram_max: 2}\n", "speculative: {draft_model: x.gguf}\n",
        "speculative: {method: ngram, draft_model: x.gguf}\n", "speculative: {method: draft}\n",
        "speculative: {method: draft, draft_model: ''}\n"}) {
    auto r = ParseInferenceConfig(bad, "inference.yaml");
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("speculative"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace brisk
