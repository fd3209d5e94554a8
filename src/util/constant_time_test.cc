#include "util/constant_time.h"

#include <gtest/gtest.h>

#include <string>

namespace brisk {
namespace {

TEST(ConstantTimeTest, EqualOnlyWhenEveryByteAndTheLengthMatch) {
  EXPECT_TRUE(ConstantTimeEquals("sk-secret", "sk-secret"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("sk-secret", "sk-secreT"));  // last byte
  EXPECT_FALSE(ConstantTimeEquals("Sk-secret", "sk-secret"));  // first byte
  // A prefix or extension of the key is not the key (either side longer).
  EXPECT_FALSE(ConstantTimeEquals("sk-secre", "sk-secret"));
  EXPECT_FALSE(ConstantTimeEquals("sk-secret", "sk-secre"));
  EXPECT_FALSE(ConstantTimeEquals("", "sk-secret"));
  EXPECT_FALSE(ConstantTimeEquals("sk-secret", ""));
  // A repeat of the key is not the key (a compare that wraps around would say so).
  EXPECT_FALSE(ConstantTimeEquals("abcabc", "abc"));
  // Bytes above 0x7f and NULs compare as bytes.
  const std::string with_nul("a\0b", 3);
  EXPECT_TRUE(ConstantTimeEquals(with_nul, std::string("a\0b", 3)));
  EXPECT_FALSE(ConstantTimeEquals(with_nul, "a"));
  EXPECT_FALSE(ConstantTimeEquals("\xff", "\x7f"));
}

}  // namespace
}  // namespace brisk
