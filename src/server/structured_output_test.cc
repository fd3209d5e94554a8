// response_format parsing, the strict check and the unenforced-keywords header.
#include "server/structured_output.h"

#include <gtest/gtest.h>

#include "server/openai_test_util.h"

namespace brisk {
namespace {

using namespace api::test_util;

TEST(ResponseFormatTest, Parses) {
  EXPECT_FALSE(MustParse(kChat, ChatWith(R"("response_format":{"type":"text"})")).response_format);
  auto r = MustParse(kChat, ChatWith(R"("response_format":{"type":"json_object"})"));
  ASSERT_TRUE(r.response_format);
  EXPECT_EQ(r.response_format->kind, api::ResponseFormat::Kind::kJsonObject);
  r = MustParse(kChat, ChatWith(R"("response_format":{"type":"json_schema","json_schema":
      {"name":"p","strict":true,"schema":{"type":"object","properties":{"b":{},"a":{}}}}})"));
  ASSERT_TRUE(r.response_format);
  EXPECT_EQ(r.response_format->kind, api::ResponseFormat::Kind::kJsonSchema);
  EXPECT_TRUE(r.response_format->strict);
  EXPECT_EQ(r.response_format->name, "p");
  // Key order is kept: the output follows `properties` order.
  EXPECT_EQ(r.response_format->schema, R"({"type":"object","properties":{"b":{},"a":{}}})");
  // Completions: an extension.
  r = MustParse(kCompl, ComplWith(R"("response_format":{"type":"json_object"})"));
  EXPECT_TRUE(r.response_format);
}

TEST(ResponseFormatTest, Errors) {
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("response_format":{"type":"json_schema"})")).param,
            "response_format.json_schema");
  EXPECT_EQ(
      MustFail(kChat, ChatWith(R"("response_format":{"type":"json_schema","json_schema":{}})"))
          .param,
      "response_format.json_schema.name");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("response_format":{"type":"json_schema",
                "json_schema":{"name":"x","schema":3}})"))
                .code,
            "invalid_type");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("response_format":{"type":"xml"})")).code, "invalid_value");
}

TEST(StructuredOutputTest, StrictRejectsUnenforcedKeywords) {
  ConstraintCache cache(4);
  api::ResponseFormat rf;
  rf.kind = api::ResponseFormat::Kind::kJsonSchema;
  // A lookahead: a pattern the compiler cannot enforce.
  rf.schema = R"({"type":"object","properties":{"zip":{"type":"string","pattern":"^(?!0)\\d+$"}}})";
  rf.strict = true;
  auto r = PrepareConstraint(&cache, rf);
  auto* e = std::get_if<api::ApiError>(&r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->code, "unsupported");
  EXPECT_EQ(e->param, "response_format.json_schema.schema");
  EXPECT_NE(e->message.find("pattern at '/properties/zip'"), std::string::npos) << e->message;

  rf.strict = false;
  r = PrepareConstraint(&cache, rf);
  auto* ok = std::get_if<PreparedConstraint>(&r);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->compiled_now);  // the strict attempt compiled it
  ASSERT_EQ(ok->unenforced.size(), 1u);
  EXPECT_EQ(UnenforcedKeywordsHeaderValue(ok->unenforced), "pattern@/properties/zip");
  EXPECT_EQ(cache.size(), 1u);

  rf.schema = R"({"type":"nope"})";
  r = PrepareConstraint(&cache, rf);
  ASSERT_TRUE(std::get_if<api::ApiError>(&r));
  EXPECT_EQ(std::get<api::ApiError>(r).code, "invalid_value");
}

TEST(StructuredOutputTest, HeaderValueIsEscapedAndCapped) {
  std::vector<UnenforcedKeyword> u = {{"pattern", "/properties/a,b c\n%"}, {"format", ""}};
  EXPECT_EQ(UnenforcedKeywordsHeaderValue(u), "pattern@/properties/a%2Cb%20c%0A%25,format@");
  std::vector<UnenforcedKeyword> many(500, {"pattern", "/properties/some_long_name"});
  const std::string v = UnenforcedKeywordsHeaderValue(many);
  EXPECT_LE(v.size(), kMaxUnenforcedHeaderBytes);
  EXPECT_EQ(v.substr(v.size() - 4), ",...");
}

TEST(ConstraintCacheTest, EvictsLeastRecentlyUsed) {
  ConstraintCache cache(2);
  const auto spec = [](const char* s) {
    return ConstraintSpec{ConstraintSpec::Kind::kJsonSchema, s};
  };
  bool hit = true;
  ASSERT_TRUE(cache.Get(spec(R"({"type":"string"})"), &hit).ok());
  EXPECT_FALSE(hit);
  ASSERT_TRUE(cache.Get(spec(R"({"type":"integer"})"), &hit).ok());
  ASSERT_TRUE(cache.Get(spec(R"({"type":"string"})"), &hit).ok());
  EXPECT_TRUE(hit);
  ASSERT_TRUE(cache.Get(spec(R"({"type":"null"})"), &hit).ok());  // evicts integer
  ASSERT_TRUE(cache.Get(spec(R"({"type":"integer"})"), &hit).ok());
  EXPECT_FALSE(hit);
  EXPECT_EQ(cache.size(), 2u);
  // json_object and a schema with the same text are different entries.
  ASSERT_TRUE(cache.Get(ConstraintSpec{ConstraintSpec::Kind::kJsonObject, ""}, &hit).ok());
  EXPECT_FALSE(hit);
}

}  // namespace
}  // namespace brisk
