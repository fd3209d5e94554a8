// Helpers of the inference.yaml tests (config_test.cc, config_rope_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "config/inference_config.h"

namespace brisk::config_test {

inline constexpr char kFile[] = "inference.yaml";

// The parsed config; a parse error fails the test.
inline InferenceConfig Parse(std::string_view text) {
  Expected<InferenceConfig> c = ParseInferenceConfig(text, kFile);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : InferenceConfig{};
}

// The error message, or "" when parsing succeeded.
inline std::string ErrorOf(std::string_view text) {
  Expected<InferenceConfig> c = ParseInferenceConfig(text, kFile);
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  return c.status().message();
}

}  // namespace brisk::config_test
