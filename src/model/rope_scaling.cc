#include "model/rope_scaling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

namespace brisk {

namespace {

constexpr std::string_view kTypeNames[] = {"none", "linear", "yarn"};

// The dimension pair (fractional) that turns `turns` times over `context`
// positions: base^(-2i/d) * context = 2 pi turns, solved for i.
double PairTurning(double turns, double base, int rope_dim, double context) {
  return rope_dim * std::log(context / (turns * 2 * std::numbers::pi)) / (2 * std::log(base));
}

}  // namespace

Expected<RopeScaling::Type> ParseRopeScalingType(std::string_view name) {
  for (size_t i = 0; i < std::size(kTypeNames); ++i)
    if (name == kTypeNames[i]) return static_cast<RopeScaling::Type>(i);
  return Unimplemented("rope scaling type '{}' is not supported (none, linear, yarn)", name);
}

std::string_view RopeScalingTypeName(RopeScaling::Type type) {
  return kTypeNames[static_cast<size_t>(type)];
}

Status ValidateRopeScaling(const RopeScaling& s) {
  if (!(s.factor >= 1 && s.factor <= 1024))
    return InvalidArgument("rope scaling factor {} is invalid (1..1024)", s.factor);
  if (s.type != RopeScaling::Type::kYarn) return Status::Ok();
  if (s.original_context <= 0)
    return InvalidArgument("yarn needs the original context length, got {}", s.original_context);
  if (!(s.beta_slow > 0 && s.beta_fast > s.beta_slow))
    return InvalidArgument("yarn beta_fast {} / beta_slow {} are invalid (0 < slow < fast)",
                           s.beta_fast, s.beta_slow);
  if (!(s.attn_factor > 0 && s.attn_factor <= 16))
    return InvalidArgument("yarn attention factor {} is invalid", s.attn_factor);
  return Status::Ok();
}

std::vector<double> RopeInverseFrequencies(double base, int rope_dim, const RopeScaling& s) {
  const int half = rope_dim / 2;
  std::vector<double> inv(half);
  for (int i = 0; i < half; ++i) inv[i] = std::pow(base, -2.0 * i / rope_dim);
  if (s.type == RopeScaling::Type::kLinear) {
    for (double& f : inv) f /= s.factor;
  } else if (s.type == RopeScaling::Type::kYarn) {
    // Ramp ends rounded outwards to whole pairs and clamped to the dimension
    // range, as the YaRN reference implementation does.
    const double ctx = static_cast<double>(s.original_context);
    const double lo = std::max(0.0, std::floor(PairTurning(s.beta_fast, base, rope_dim, ctx)));
    const double hi =
        std::min(rope_dim - 1.0, std::ceil(PairTurning(s.beta_slow, base, rope_dim, ctx)));
    for (int i = 0; i < half; ++i) {
      // 0: keep the trained frequency (fast pairs); 1: interpolate (slow pairs).
      const double ramp = std::clamp((i - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
      inv[i] = inv[i] * (1 - ramp) + inv[i] / s.factor * ramp;
    }
  }
  return inv;
}

std::string RopeScalingKey(const RopeScaling& s) {
  if (s.type == RopeScaling::Type::kNone) return "none";
  std::string key =
      fmt::format("{}-x{}-o{}", RopeScalingTypeName(s.type), s.factor, s.original_context);
  const RopeScaling defaults;
  if (s.type == RopeScaling::Type::kYarn &&
      (s.beta_fast != defaults.beta_fast || s.beta_slow != defaults.beta_slow ||
       s.attn_factor != defaults.attn_factor))
    key += fmt::format("-b{}-{}-a{}", s.beta_fast, s.beta_slow, s.attn_factor);
  return key;
}

Expected<RopeScaling> ParseRopeScalingKey(std::string_view key) {
  RopeScaling s;
  if (key == "none") return s;
  const std::string text(key);
  char type[8] = {};
  int used = 0;
  long long original = 0;
  if (std::sscanf(text.c_str(), "%7[a-z]-x%lf-o%lld%n", type, &s.factor, &original, &used) != 3)
    return InvalidArgument("'{}' is not a rope scaling key (like yarn-x2-o8192)", key);
  s.original_context = original;
  if (used < static_cast<int>(text.size())) {
    int more = 0;
    if (std::sscanf(text.c_str() + used, "-b%lf-%lf-a%lf%n", &s.beta_fast, &s.beta_slow,
                    &s.attn_factor, &more) != 3 ||
        used + more != static_cast<int>(text.size()))
      return InvalidArgument("'{}' is not a rope scaling key (like yarn-x2-o8192)", key);
  }
  ASSIGN_OR_RETURN(s.type, ParseRopeScalingType(type));
  if (s.type == RopeScaling::Type::kNone)
    return InvalidArgument("'{}' is not a rope scaling key (like yarn-x2-o8192)", key);
  RETURN_IF_ERROR(ValidateRopeScaling(s));
  return s;
}

double RopeMagnitude(const RopeScaling& s) {
  if (s.type != RopeScaling::Type::kYarn) return 1;
  return s.attn_factor * (0.1 * std::log(s.factor) + 1);
}

}  // namespace brisk
