#include "server/openai_fields.h"

#include <gtest/gtest.h>

#include <string>

namespace brisk::api::fields {
namespace {

TEST(OpenAiFieldsTest, ReadInt64AcceptsIntegralNumbersOnly) {
  int64_t v = 0;
  EXPECT_FALSE(ReadInt64(Json(7), "x", &v));
  EXPECT_EQ(v, 7);
  EXPECT_FALSE(ReadInt64(Json(16.0), "x", &v));
  EXPECT_EQ(v, 16);
  EXPECT_FALSE(ReadInt64(Json(std::numeric_limits<int64_t>::min()), "x", &v));
  EXPECT_EQ(v, std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(ReadInt64(Json(std::numeric_limits<int64_t>::max()), "x", &v));
  EXPECT_EQ(v, std::numeric_limits<int64_t>::max());
  // A double at -2^63 is what the literal -(2^63) - 1 becomes: refused.
  EXPECT_EQ(ReadInt64(Json(-0x1p63), "x", &v)->code, "invalid_value");
  EXPECT_FALSE(ReadInt64(Json(-0x1p62), "x", &v));
  EXPECT_EQ(v, -(int64_t{1} << 62));
  EXPECT_EQ(ReadInt64(Json(1.5), "x", &v)->code, "invalid_type");
  EXPECT_EQ(ReadInt64(Json(true), "x", &v)->code, "invalid_type");
  EXPECT_EQ(ReadInt64(Json("1"), "x", &v)->code, "invalid_type");
  EXPECT_EQ(ReadInt64(Json(0x1p63), "x", &v)->code, "invalid_value");
  EXPECT_EQ(ReadInt64(Json(uint64_t{1} << 63), "x", &v)->code, "invalid_value");
}

TEST(OpenAiFieldsTest, RangesAreNamedInMessages) {
  int64_t i = 0;
  double d = 0;
  EXPECT_EQ(ReadIntIn(Json(0), "n", 1, 128, &i)->message, "'n' must be in [1, 128], got 0");
  EXPECT_EQ(ReadIntIn(Json(0), "k", 1, kIntMax, &i)->message, "'k' must be >= 1, got 0");
  EXPECT_EQ(ReadIntIn(Json(int64_t{1} << 40), "k", 1, kIntMax, &i)->message,
            "'k' must be <= 2147483647, got 1099511627776");
  EXPECT_EQ(ReadNumberIn(Json(0), "top_p", 0, 1, true, false, &d)->message,
            "'top_p' must be in (0, 1], got 0");
  EXPECT_FALSE(ReadNumberIn(Json(1), "top_p", 0, 1, true, false, &d));
  EXPECT_EQ(ReadNumberIn(Json(1), "x", 0, 1, false, true, &d)->param, "x");
  EXPECT_EQ(ReadNumber(Json("0.5"), "t", &d)->message, "'t' must be a number, got string");
}

TEST(OpenAiFieldsTest, GetTreatsNullAsAbsent) {
  const Json obj = Json::parse(R"({"a":null,"b":0})");
  EXPECT_EQ(Get(obj, "a"), nullptr);
  EXPECT_EQ(Get(obj, "c"), nullptr);
  ASSERT_NE(Get(obj, "b"), nullptr);
  EXPECT_EQ(*Get(obj, "b"), 0);
}

TEST(OpenAiFieldsTest, ClientTextIsCut) {
  EXPECT_EQ(Snippet(std::string(100, 'x')).size(), 67u);
  ApiError e = Unknown(std::string(1000, 'k'));
  EXPECT_EQ(e.param, std::string(64, 'k') + "...");
  EXPECT_LT(e.message.size(), 120u);
  EXPECT_EQ(CountCodePoints("a\xC3\xA9\xE2\x9C\x93\xF0\x9F\x98\x80"), 4u);
  EXPECT_EQ(CountCodePoints(""), 0u);
}

}  // namespace
}  // namespace brisk::api::fields
