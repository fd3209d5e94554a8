// vLLM's structured_outputs and guided_* fields: what the parser fills,
// the one-constraint rule, and the 400s for constraints that do not
// compile (PrepareGuidedConstraint).
#include "server/openai_guided.h"

#include <gtest/gtest.h>

#include <string>

#include "server/openai_test_util.h"
#include "server/structured_output.h"

namespace brisk::api {
namespace {

using namespace test_util;

TEST(OpenAiGuidedTest, StructuredOutputsKinds) {
  ApiRequest r = MustParse(kChat, ChatWith(R"("structured_outputs":{"regex":"\\d+"})"));
  ASSERT_TRUE(r.guided);
  EXPECT_EQ(r.guided->kind, GuidedSpec::Kind::kRegex);
  EXPECT_EQ(r.guided->text, "\\d+");
  EXPECT_EQ(r.guided->param, "structured_outputs.regex");
  r = MustParse(kCompl, ComplWith(R"("structured_outputs":{"choice":["a","b c"]})"));
  ASSERT_TRUE(r.guided);
  EXPECT_EQ(r.guided->kind, GuidedSpec::Kind::kChoice);
  EXPECT_EQ(r.guided->text, R"(["a","b c"])");
  r = MustParse(kChat, ChatWith(R"("structured_outputs":{"grammar":"root ::= \"x\""})"));
  ASSERT_TRUE(r.guided);
  EXPECT_EQ(r.guided->kind, GuidedSpec::Kind::kGrammar);
  // json / json_object become the response_format.
  r = MustParse(kChat, ChatWith(R"("structured_outputs":{"json":{"type":"integer"}})"));
  EXPECT_FALSE(r.guided);
  ASSERT_TRUE(r.response_format);
  EXPECT_EQ(r.response_format->kind, ResponseFormat::Kind::kJsonSchema);
  EXPECT_EQ(r.response_format->schema, R"({"type":"integer"})");
  EXPECT_FALSE(r.response_format->strict);
  r = MustParse(kChat, ChatWith(R"("structured_outputs":{"json_object":true})"));
  ASSERT_TRUE(r.response_format);
  EXPECT_EQ(r.response_format->kind, ResponseFormat::Kind::kJsonObject);
  // Nulls are "not given" (SDK objects dumped with every field).
  r = MustParse(kChat, ChatWith(R"("structured_outputs":{"regex":null,"choice":["x"]})"));
  ASSERT_TRUE(r.guided);
  EXPECT_EQ(r.guided->kind, GuidedSpec::Kind::kChoice);
}

TEST(OpenAiGuidedTest, OlderGuidedFields) {
  ApiRequest r = MustParse(kCompl, ComplWith(R"("guided_regex":"a|b")"));
  ASSERT_TRUE(r.guided);
  EXPECT_EQ(r.guided->param, "guided_regex");
  r = MustParse(kChat, ChatWith(R"("guided_choice":["yes","no"])"));
  ASSERT_TRUE(r.guided);
  EXPECT_EQ(r.guided->kind, GuidedSpec::Kind::kChoice);
  r = MustParse(kChat, ChatWith(R"("guided_grammar":"root ::= [a-z]+")"));
  ASSERT_TRUE(r.guided);
  r = MustParse(kChat, ChatWith(R"("guided_json":"{\"type\":\"boolean\"}")"));
  ASSERT_TRUE(r.response_format);
  EXPECT_EQ(r.response_format->schema, R"({"type":"boolean"})");
}

TEST(OpenAiGuidedTest, OneConstraintPerRequest) {
  ApiError e = MustFail(kChat, ChatWith(R"("structured_outputs":{"regex":"a","choice":["a"]})"));
  EXPECT_NE(e.message.find("Only one"), std::string::npos) << e.message;
  e = MustFail(kChat, ChatWith(R"("structured_outputs":{"regex":"a"},"guided_regex":"a")"));
  EXPECT_NE(e.message.find("Only one"), std::string::npos) << e.message;
  e = MustFail(kChat, ChatWith(R"("guided_regex":"a","response_format":{"type":"json_object"})"));
  EXPECT_EQ(e.param, "guided_regex");
  EXPECT_NE(e.message.find("response_format"), std::string::npos) << e.message;
  e = MustFail(kChat, ChatWith(R"("guided_choice":["a"],"tools":[{"type":"function",
      "function":{"name":"f","parameters":{"type":"object"}}}])"));
  EXPECT_NE(e.message.find("tools"), std::string::npos) << e.message;
}

TEST(OpenAiGuidedTest, BadShapes) {
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("structured_outputs":"regex")")).code, "invalid_type");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("structured_outputs":{"regex":1})")).code, "invalid_type");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("guided_choice":[])")).code, "invalid_value");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("guided_choice":["a",2])")).param, "guided_choice[1]");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("guided_json":"not json")")).code, "invalid_value");
  ApiError e = MustFail(kChat, ChatWith(R"("structured_outputs":{"regexp":"a"})"));
  EXPECT_EQ(e.code, "unknown_parameter");
  EXPECT_EQ(e.param, "structured_outputs.regexp");
}

TEST(OpenAiGuidedTest, CompileErrorsAre400NamingTheField) {
  GuidedSpec g{GuidedSpec::Kind::kRegex, "(?<=a)b", "structured_outputs.regex"};
  auto c = PrepareGuidedConstraint(nullptr, g);
  ASSERT_TRUE(std::holds_alternative<ApiError>(c));
  const ApiError& e = std::get<ApiError>(c);
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "structured_outputs.regex");
  EXPECT_NE(e.message.find("lookbehind"), std::string::npos) << e.message;
  g = {GuidedSpec::Kind::kGrammar, "root ::= a\n", "guided_grammar"};
  c = PrepareGuidedConstraint(nullptr, g);
  ASSERT_TRUE(std::holds_alternative<ApiError>(c));
  EXPECT_NE(std::get<ApiError>(c).message.find("undefined rule 'a'"), std::string::npos);
  ConstraintCache cache;
  g = {GuidedSpec::Kind::kChoice, R"(["x","y"])", "guided_choice"};
  c = PrepareGuidedConstraint(&cache, g);
  ASSERT_TRUE(std::holds_alternative<PreparedConstraint>(c));
  EXPECT_TRUE(std::get<PreparedConstraint>(c).compiled_now);
  EXPECT_TRUE(std::get<PreparedConstraint>(c).constraint->is_cfg());
  c = PrepareGuidedConstraint(&cache, g);  // by content: a hit
  EXPECT_FALSE(std::get<PreparedConstraint>(c).compiled_now);
}

}  // namespace
}  // namespace brisk::api
