// Chat messages and completions prompts, through ParseRequest and directly.
#include "server/openai_prompt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/openai_test_util.h"

namespace brisk::api {
namespace {

using namespace test_util;

TEST(OpenAiApiParseTest, ContentPartsAreJoined) {
  ApiRequest r = MustParse(kChat, R"({"model":"m","messages":[{"role":"user","content":[
      {"type":"text","text":"first"},{"type":"text","text":"second"}]}]})");
  EXPECT_EQ(r.messages[0]["content"], "first\nsecond");
}

TEST(OpenAiApiParseTest, AllRolesAndAssistantWithoutContent) {
  ApiRequest r = MustParse(kChat, R"({"model":"m","messages":[
      {"role":"developer","content":"d"},{"role":"system","content":"s"},
      {"role":"user","content":"u"},{"role":"assistant","content":null,"tool_calls":[]},
      {"role":"tool","content":"t","tool_call_id":"call_1"}]})");
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[3]["content"], "");
  EXPECT_EQ(r.messages[4]["tool_call_id"], "call_1");
  EXPECT_FALSE(r.messages[3].contains("tool_calls"));
}

TEST(OpenAiApiParseTest, UnknownNullKeysInMessagesIgnored) {
  ApiRequest r = MustParse(kChat, R"({"model":"m","messages":[{"role":"assistant","content":"a",
      "refusal":null,"audio":null,"function_call":null,"reasoning_content":null},
      {"role":"user","content":[{"type":"text","text":"u","cache_control":null}]}]})");
  EXPECT_EQ(r.messages[0].dump(), R"({"role":"assistant","content":"a"})");
  EXPECT_EQ(r.messages[1]["content"], "u");
}

TEST(OpenAiApiParseTest, CompletionsPromptForms) {
  ApiRequest r = MustParse(kCompl, ComplWith(R"("max_tokens":8,"n":3)"));
  EXPECT_EQ(r.prompts, (std::vector<std::string>{"Once upon"}));
  EXPECT_TRUE(r.prompt_tokens.empty());
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.max_tokens, 8);

  r = MustParse(kCompl, R"({"model":"m","prompt":["a","b","c"]})");
  EXPECT_EQ(r.prompts, (std::vector<std::string>{"a", "b", "c"}));

  r = MustParse(kCompl, R"({"model":"m","prompt":[1,2,3]})");
  EXPECT_TRUE(r.prompts.empty());
  EXPECT_EQ(r.prompt_tokens, (std::vector<std::vector<int32_t>>{{1, 2, 3}}));

  r = MustParse(kCompl, R"({"model":"m","prompt":[[1,2],[3.0]]})");
  EXPECT_EQ(r.prompt_tokens, (std::vector<std::vector<int32_t>>{{1, 2}, {3}}));
}

TEST(OpenAiApiParseTest, UnicodeContentSurvives) {
  ApiRequest r = MustParse(
      kChat,
      R"({"model":"m","messages":[{"role":"user","content":"h\u00e9llo ✓ 😀 \ud83d\ude00"}]})");
  EXPECT_EQ(r.messages[0]["content"], "h\xC3\xA9llo ✓ 😀 😀");
}

TEST(OpenAiPromptTest, ParseMessagesDirectly) {
  fields::Json out;
  EXPECT_FALSE(fields::ParseMessages(
      Json::parse(R"([{"name":"a","content":[{"type":"text","text":"x"}],"role":"user"}])"), &out));
  // Rebuilt with a fixed key order, whatever order the client used.
  EXPECT_EQ(out.dump(), R"([{"role":"user","content":"x","name":"a"}])");
  auto e = fields::ParseMessages(Json::parse(R"([{"role":"user","content":"x"},7])"), &out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages[1]");
  EXPECT_EQ(fields::ParseMessages(Json::array(), &out)->code, "empty_array");
}

TEST(OpenAiPromptTest, ParsePromptDirectly) {
  ApiRequest req;
  EXPECT_FALSE(fields::ParsePrompt(Json::parse(R"([[5],[6,7]])"), &req));
  EXPECT_EQ(req.prompt_tokens, (std::vector<std::vector<int32_t>>{{5}, {6, 7}}));
  EXPECT_TRUE(req.prompts.empty());
  ApiRequest bad;
  auto e = fields::ParsePrompt(Json::parse(R"([1,2,-3])"), &bad);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "prompt[2]");
  EXPECT_EQ(e->code, "invalid_value");
  EXPECT_EQ(fields::ParsePrompt(Json(true), &bad)->code, "invalid_type");
}

}  // namespace
}  // namespace brisk::api
