// inference.yaml's model.rope_scaling keys (model/rope_scaling.h) and their
// check, run by the config loader (and again by brisk serve after its flags:
// cli/local_serving_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "config/inference_config.h"
#include "config/inference_config_test_util.h"

namespace brisk {
namespace {

using ::testing::HasSubstr;

using config_test::ErrorOf;
using config_test::Parse;

TEST(ConfigTest, RopeScaling) {
  const InferenceConfig d = Parse("");
  EXPECT_EQ(d.model.rope_scaling, "file");
  EXPECT_EQ(d.model.rope_scaling_factor, 0);
  EXPECT_EQ(d.model.rope_original_context, 0);
  const InferenceConfig y = Parse("model: {max_context_tokens: 65536, rope_scaling: yarn}\n");
  EXPECT_EQ(y.model.rope_scaling, "yarn");
  EXPECT_EQ(
      Parse("model: {rope_scaling: linear, rope_scaling_factor: 2.5}\n").model.rope_scaling_factor,
      2.5);
  EXPECT_EQ(Parse("model: {rope_scaling: none}\n").model.rope_scaling, "none");
  EXPECT_THAT(ErrorOf("model: {rope_scaling: ntk}\n"),
              HasSubstr("model.rope_scaling: 'ntk' is not one of file, none, linear, yarn"));
  // The factor and original context only go with a scaling that uses them.
  EXPECT_EQ(ErrorOf("model:\n  rope_scaling_factor: 2\n"),
            "inference.yaml:2: model.rope_scaling_factor needs model.rope_scaling: linear or "
            "yarn (it is 'file')");
  EXPECT_THAT(ErrorOf("model: {rope_scaling: none, rope_original_context: 4096}\n"),
              HasSubstr("model.rope_original_context needs model.rope_scaling: linear or yarn"));
  // yarn needs to know how far to extend.
  EXPECT_THAT(ErrorOf("model: {rope_scaling: yarn}\n"),
              HasSubstr("needs model.rope_scaling_factor or model.max_context_tokens"));
  EXPECT_THAT(ErrorOf("model: {rope_scaling: yarn, rope_scaling_factor: 0.5}\n"),
              HasSubstr("must be 0 (from max_context_tokens) or >= 1, got 0.5"));
  EXPECT_THAT(ErrorOf("model: {rope_scaling: yarn, rope_scaling_factor: many}\n"),
              HasSubstr("model.rope_scaling_factor: expected a number in 0..1024"));
  EXPECT_THAT(ErrorOf("model: {rope_scaling: yarn, rope_scaling_factor: 2000}\n"),
              HasSubstr("expected a number in 0..1024"));
}

}  // namespace
}  // namespace brisk
