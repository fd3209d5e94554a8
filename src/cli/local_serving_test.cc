// The serving profile turned into what the engine loads: model.rope_scaling
// keys as load options (SetRopeScaling).
#include "cli/local_serving.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace brisk {
namespace {

using ::testing::HasSubstr;

// brisk serve's flags change the keys after the file was checked: the same
// check runs when they become load options, so a factor without a scaling
// is an error there too, not silently ignored.
TEST(ConfigTest, RopeScalingLoadOptions) {
  InferenceConfig::Model m;
  LoadOptions o;
  ASSERT_TRUE(SetRopeScaling(m, &o).ok());
  EXPECT_FALSE(o.rope_scaling.has_value());  // file: the GGUF's own

  m.rope_scaling_factor = 4;  // --rope-scaling-factor 4 alone
  Status st = SetRopeScaling(m, &o);
  EXPECT_THAT(st.message(), HasSubstr("model.rope_scaling_factor needs model.rope_scaling"));

  m.rope_scaling = "yarn";
  m.rope_original_context = 4096;
  ASSERT_TRUE(SetRopeScaling(m, &o).ok());
  ASSERT_TRUE(o.rope_scaling.has_value());
  EXPECT_EQ(o.rope_scaling->type, RopeScaling::Type::kYarn);
  EXPECT_EQ(o.rope_scaling->factor, 4);
  EXPECT_EQ(o.rope_scaling->original_context, 4096);

  InferenceConfig::Model derive;
  derive.rope_scaling = "linear";
  EXPECT_THAT(SetRopeScaling(derive, &o).message(),
              HasSubstr("needs model.rope_scaling_factor or model.max_context_tokens"));
  derive.max_context_tokens = 16384;
  LoadOptions d;
  ASSERT_TRUE(SetRopeScaling(derive, &d).ok());
  EXPECT_EQ(d.rope_scaling->factor, 0);  // derived at load, from the file's context
  EXPECT_EQ(d.context_tokens, 16384);
}

}  // namespace
}  // namespace brisk
