#include "model/rope_scaling.h"

#include <gtest/gtest.h>

#include <cmath>

namespace brisk {
namespace {

using Type = RopeScaling::Type;

double Plain(double base, int d, int i) { return std::pow(base, -2.0 * i / d); }

TEST(RopeScaling, NoneIsThePlainFrequencies) {
  const auto inv = RopeInverseFrequencies(10000, 64, {});
  ASSERT_EQ(inv.size(), 32u);
  for (int i = 0; i < 32; ++i) EXPECT_DOUBLE_EQ(inv[i], Plain(10000, 64, i));
  EXPECT_EQ(RopeMagnitude({}), 1.0);
}

TEST(RopeScaling, LinearDividesEveryFrequency) {
  const RopeScaling s{.type = Type::kLinear, .factor = 8};
  const auto inv = RopeInverseFrequencies(10000, 64, s);
  for (int i = 0; i < 32; ++i) EXPECT_DOUBLE_EQ(inv[i], Plain(10000, 64, i) / 8);
  EXPECT_EQ(RopeMagnitude(s), 1.0);
}

// base 10000, 64 dimensions, trained on 2048 positions, factor 4. The pair
// turning 32 times over 2048 positions is 64 ln(2048 / (32 * 2 pi)) /
// (2 ln 10000) = 8.06 -> 8 (rounded down); the pair turning once is 20.1 -> 21
// (rounded up). Pairs 0..8 keep their frequency, 21..31 are divided by 4, the
// ones between move linearly from one to the other.
TEST(RopeScaling, YarnKeepsFastPairsAndInterpolatesSlowOnes) {
  const RopeScaling s{.type = Type::kYarn, .factor = 4, .original_context = 2048};
  const auto inv = RopeInverseFrequencies(10000, 64, s);
  for (int i = 0; i <= 8; ++i) EXPECT_DOUBLE_EQ(inv[i], Plain(10000, 64, i)) << i;
  for (int i = 21; i < 32; ++i) EXPECT_DOUBLE_EQ(inv[i], Plain(10000, 64, i) / 4) << i;
  for (int i = 9; i < 21; ++i) {
    const double ramp = (i - 8) / 13.0;
    const double f = Plain(10000, 64, i);
    EXPECT_NEAR(inv[i], f * (1 - ramp) + f / 4 * ramp, 1e-15) << i;
  }
  // Every attention logit grows by (0.1 ln 4 + 1)^2: cos and sin by its root.
  EXPECT_NEAR(RopeMagnitude(s), 1.1386294361, 1e-9);
  RopeScaling half = s;
  half.attn_factor = 0.5;
  EXPECT_NEAR(RopeMagnitude(half), 0.5 * 1.1386294361, 1e-9);
}

TEST(RopeScaling, YarnWithFactorOneChangesNothing) {
  const RopeScaling s{.type = Type::kYarn, .factor = 1, .original_context = 4096};
  const auto inv = RopeInverseFrequencies(500000, 128, s);
  for (int i = 0; i < 64; ++i) EXPECT_DOUBLE_EQ(inv[i], Plain(500000, 128, i));
  EXPECT_DOUBLE_EQ(RopeMagnitude(s), 1.0);
}

// A short trained context puts both ramp ends outside the dimensions: every
// pair turns fewer than 32 times, so nothing keeps its frequency in full.
TEST(RopeScaling, YarnRampEndsAreClampedToTheDimensions) {
  const RopeScaling s{.type = Type::kYarn, .factor = 4, .original_context = 32};
  const auto inv = RopeInverseFrequencies(1e6, 64, s);
  EXPECT_DOUBLE_EQ(inv[0], 1.0);  // the ramp starts at pair 0
  for (int i = 1; i < 32; ++i) EXPECT_LT(inv[i], Plain(1e6, 64, i)) << i;
  EXPECT_DOUBLE_EQ(inv[31], Plain(1e6, 64, 31) / 4);
}

TEST(RopeScaling, NamesAndValidation) {
  EXPECT_EQ(*ParseRopeScalingType("yarn"), Type::kYarn);
  EXPECT_EQ(*ParseRopeScalingType("linear"), Type::kLinear);
  EXPECT_EQ(*ParseRopeScalingType("none"), Type::kNone);
  EXPECT_EQ(RopeScalingTypeName(Type::kYarn), "yarn");
  auto bad = ParseRopeScalingType("longrope");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("longrope"), std::string::npos);

  EXPECT_TRUE(ValidateRopeScaling({.type = Type::kLinear, .factor = 2}).ok());
  EXPECT_FALSE(ValidateRopeScaling({.type = Type::kLinear, .factor = 0.5}).ok());
  EXPECT_FALSE(ValidateRopeScaling({.type = Type::kLinear, .factor = NAN}).ok());
  EXPECT_FALSE(ValidateRopeScaling({.type = Type::kYarn, .factor = 2}).ok());  // no context
  EXPECT_TRUE(ValidateRopeScaling({.type = Type::kYarn, .factor = 2, .original_context = 8}).ok());
  EXPECT_FALSE(ValidateRopeScaling(
                   {.type = Type::kYarn, .factor = 2, .original_context = 8, .beta_fast = 0.5})
                   .ok());
}

TEST(RopeScaling, KeyTextRoundTrips) {
  const RopeScaling yarn{.type = Type::kYarn, .factor = 2, .original_context = 8192};
  EXPECT_EQ(RopeScalingKey(yarn), "yarn-x2-o8192");
  const RopeScaling linear{.type = Type::kLinear, .factor = 2.5, .original_context = 32768};
  EXPECT_EQ(RopeScalingKey(linear), "linear-x2.5-o32768");
  EXPECT_EQ(RopeScalingKey({}), "none");
  RopeScaling odd = yarn;
  odd.factor = 8192.0 / 3000;  // not a short decimal
  odd.beta_fast = 16;
  odd.attn_factor = 1.5;
  for (const RopeScaling& s : {yarn, linear, odd, RopeScaling{}}) {
    auto back = ParseRopeScalingKey(RopeScalingKey(s));
    ASSERT_TRUE(back.ok()) << RopeScalingKey(s) << ": " << back.status().ToString();
    EXPECT_EQ(*back, s) << RopeScalingKey(s);
  }
  for (const char* bad : {"", "yarn", "yarn-x2", "yarn-x2-o8192-", "ntk-x2-o10", "yarn-x0.5-o10",
                          "none-x2-o10", "yarn-x2-o8192-b1-2-a1x"})
    EXPECT_FALSE(ParseRopeScalingKey(bad).ok()) << bad;
}

}  // namespace
}  // namespace brisk
