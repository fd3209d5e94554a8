// RoPE context extension: serving a model past the context it was trained on.
//
//  - linear (position interpolation): every frequency divided by the factor.
//  - yarn (YaRN, arXiv:2309.00071, "NTK-by-parts" plus attention temperature):
//    dimension pairs that turn many times over the trained context keep their
//    frequency, pairs that turn less than once are divided by the factor, a
//    linear ramp between; cos and sin are multiplied by 0.1 ln(factor) + 1, so
//    every attention logit grows by that squared.
//
// The scaling comes from the GGUF file's `{arch}.rope.scaling.*` keys or from
// the serving profile (model.rope_scaling, which replaces the file's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace brisk {

struct RopeScaling {
  enum class Type : uint8_t { kNone, kLinear, kYarn };
  Type type = Type::kNone;
  double factor = 1;             // context multiplier, >= 1
  int64_t original_context = 0;  // the trained context the factor extends
  // YaRN's ramp ends, in turns over original_context: pairs turning more
  // than beta_fast times keep their frequency, fewer than beta_slow times are
  // interpolated. The paper's values.
  double beta_fast = 32;
  double beta_slow = 1;
  double attn_factor = 1;  // YaRN: multiplies the cos/sin magnitude as well
  bool operator==(const RopeScaling&) const = default;
};

// "none", "linear", "yarn" (the GGUF key's and the profile's names).
Expected<RopeScaling::Type> ParseRopeScalingType(std::string_view name);
std::string_view RopeScalingTypeName(RopeScaling::Type type);

// Checks the fields' ranges (factor >= 1, a positive original context for
// yarn, 0 < beta_slow < beta_fast, attn_factor > 0).
Status ValidateRopeScaling(const RopeScaling& s);

// Radians per position of each dimension pair i in [0, rope_dim / 2):
// base^(-2i / rope_dim), scaled as `s` says.
std::vector<double> RopeInverseFrequencies(double base, int rope_dim, const RopeScaling& s);

// The factor on cos and sin: attn_factor * (0.1 ln(factor) + 1) for yarn, 1
// otherwise.
double RopeMagnitude(const RopeScaling& s);

// The serving key's text of a scaling (cli/serving_gate.h): "none",
// "linear-x4-o8192", "yarn-x2-o8192" (factor, original context; YaRN's
// betas and attention factor when they are not the defaults: "-b32-1-a1.5").
// ParseRopeScalingKey reads it back exactly.
std::string RopeScalingKey(const RopeScaling& s);
Expected<RopeScaling> ParseRopeScalingKey(std::string_view key);

}  // namespace brisk
