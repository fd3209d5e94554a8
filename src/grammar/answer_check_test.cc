#include "grammar/answer_check.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace brisk {
namespace {

using Json = nlohmann::json;

AnswerCheck ForSchema(const Json& schema) {
  return AnswerCheck::FromRequest(
      {{"response_format",
        {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}}}});
}

const Json kPerson = Json::parse(R"({
  "type": "object",
  "properties": {"name": {"type": "string", "maxLength": 8},
                 "age": {"type": "integer", "minimum": 0},
                 "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
  "required": ["name", "age"],
  "additionalProperties": false})");

TEST(AnswerCheck, InactiveWithoutResponseFormat) {
  AnswerCheck c = AnswerCheck::FromRequest({{"messages", Json::array()}});
  EXPECT_FALSE(c.active());
  EXPECT_EQ(c.Check("not json"), "");
  EXPECT_FALSE(AnswerCheck::FromRequest({{"response_format", {{"type", "text"}}}}).active());
  EXPECT_FALSE(AnswerCheck::FromRequest({{"response_format", 3}}).active());
}

TEST(AnswerCheck, JsonObjectWantsAnObjectOrArray) {
  AnswerCheck c = AnswerCheck::FromRequest({{"response_format", {{"type", "json_object"}}}});
  ASSERT_TRUE(c.active());
  EXPECT_FALSE(c.has_schema());
  EXPECT_EQ(c.Check(R"({"a": 1})"), "");
  EXPECT_EQ(c.Check("[1]"), "");
  EXPECT_EQ(c.Check(R"({"a": )"), "invalid_json");
  EXPECT_EQ(c.Check("42"), "invalid_json");
}

TEST(AnswerCheck, SchemaAcceptsAnyLayoutOfAValidValue) {
  AnswerCheck c = ForSchema(kPerson);
  ASSERT_TRUE(c.has_schema()) << c.skipped();
  EXPECT_EQ(c.Check(R"({"name":"Ann","age":3})"), "");
  // Other key order and whitespace than the engine's grammar writes.
  EXPECT_EQ(c.Check("{ \"age\" : 3,\n  \"name\": \"Ann\", \"tags\": [\"b\"] }"), "");
}

TEST(AnswerCheck, SchemaMismatchSaysWhere) {
  AnswerCheck c = ForSchema(kPerson);
  std::string detail;
  EXPECT_EQ(c.Check(R"({"name":"Ann"})", &detail), "schema_mismatch");
  EXPECT_NE(detail.find("age"), std::string::npos) << detail;
  EXPECT_EQ(c.Check(R"({"name":"Ann","age":"3"})"), "schema_mismatch");
  EXPECT_EQ(c.Check(R"({"name":"Ann","age":-1})"), "schema_mismatch");
  EXPECT_EQ(c.Check(R"({"name":"Annabelle!","age":1})"), "schema_mismatch");
  EXPECT_EQ(c.Check(R"({"name":"Ann","age":1,"x":0})"), "schema_mismatch");
  EXPECT_EQ(c.Check(R"({"name":"Ann","age":1,"tags":["c"]})"), "schema_mismatch");
  EXPECT_EQ(c.Check(R"({"name":"Ann","age":1.5})"), "schema_mismatch");
  EXPECT_EQ(c.Check("{\"name\":\"Ann\""), "invalid_json");
}

TEST(AnswerCheck, LocalRefsAndRecursion) {
  Json schema = Json::parse(R"({
    "$defs": {"node": {"type": "object",
                       "properties": {"v": {"type": "integer"},
                                      "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
                       "required": ["v"]}},
    "$ref": "#/$defs/node"})");
  AnswerCheck c = ForSchema(schema);
  ASSERT_TRUE(c.has_schema()) << c.skipped();
  EXPECT_EQ(c.Check(R"({"v":1,"next":{"v":2,"next":null}})"), "");
  EXPECT_EQ(c.Check(R"({"v":1,"next":{"v":"two"}})"), "schema_mismatch");
}

// Schemas valijson would crash on, or that the engine's compiler refuses,
// leave only the JSON check.
TEST(AnswerCheck, SchemasItCannotUseAreSkippedNotFatal) {
  for (const char* s :
       {R"({"$ref": "#"})",
        R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                            "$ref": "#/$defs/a"})",
        R"({"$ref": "http://example.com/s.json"})", R"({"$ref": "#/nowhere"})", R"({"type": 7})",
        // Found by gateway_parsers_fuzz: a relative ref valijson resolves to the
        // document itself, recursing until the stack ran out; and a $id moving the base.
        R"({"$ref": "object", "$defs": {"n": {"type": "object"}}})",
        R"({"$id": "http://x/s", "$defs": {"a": {}}, "$ref": "#/$defs/a"})"}) {
    AnswerCheck c = ForSchema(Json::parse(s));
    EXPECT_TRUE(c.active()) << s;
    EXPECT_FALSE(c.has_schema()) << s;
    EXPECT_FALSE(c.skipped().empty()) << s;
    EXPECT_EQ(c.Check(R"({"any": "object"})"), "") << s;
    EXPECT_EQ(c.Check("nope"), "invalid_json") << s;
  }
  EXPECT_FALSE(ForSchema(Json("string")).has_schema());
}

// A pattern is not checked (std::regex inside valijson can exhaust the stack
// on a long string); "pattern" as a property name is still a property.
TEST(AnswerCheck, PatternKeywordsAreDroppedPropertyNamesKept) {
  AnswerCheck c = ForSchema(Json::parse(R"({
    "type": "object",
    "properties": {"pattern": {"type": "string", "pattern": "^(a|b)*$"}},
    "required": ["pattern"]})"));
  ASSERT_TRUE(c.has_schema()) << c.skipped();
  EXPECT_EQ(c.Check(R"({"pattern": ")" + std::string(100000, 'a') + "c\"}"), "");
  EXPECT_EQ(c.Check(R"({"other": "x"})"), "schema_mismatch");
}

TEST(AnswerCheck, DeepAnswersAreRefusedUnwalked) {
  AnswerCheck c = ForSchema(Json::parse(R"({"type": "array"})"));
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(c.Check(deep), "too_deep");
  EXPECT_EQ(c.Check(R"(["[[[[[[[[[[[[[["])"), "");  // brackets inside a string do not count
}

}  // namespace
}  // namespace brisk
