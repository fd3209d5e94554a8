// tools / tool_choice / parallel_tool_calls parsing, assistant tool_calls in
// history, the tool-call grammar's schema and the "auto" decision.
#include "server/openai_tools.h"

#include <gtest/gtest.h>

#include "grammar/schema_compiler.h"
#include "server/openai_test_util.h"

namespace brisk::api {
namespace {

using namespace test_util;

const char* kWeather =
    R"({"type":"function","function":{"name":"get_weather","description":"Weather in a city",
        "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}})";
const char* kTime = R"({"type":"function","function":{"name":"get-time"}})";

std::string WithTools(const std::string& extra) {
  return ChatWith(std::string(R"("tools":[)") + kWeather + "," + kTime + "]" +
                  (extra.empty() ? "" : "," + extra));
}

TEST(OpenAiToolsParse, ToolsAndChoices) {
  ApiRequest r = MustParse(kChat, WithTools(""));
  ASSERT_TRUE(r.tools);
  ASSERT_EQ(r.tools->tools.size(), 2u);
  EXPECT_EQ(r.tools->tools[0].name, "get_weather");
  EXPECT_EQ(r.tools->tools[0].description, "Weather in a city");
  EXPECT_EQ(r.tools->tools[1].parameters, "{}");
  EXPECT_EQ(r.tools->choice.kind, ToolChoice::Kind::kAuto);
  EXPECT_TRUE(r.tools->parallel);
  EXPECT_EQ(r.tools->template_tools.size(), 2u);
  r = MustParse(kChat, WithTools(R"("tool_choice":"required","parallel_tool_calls":false)"));
  EXPECT_EQ(r.tools->choice.kind, ToolChoice::Kind::kRequired);
  EXPECT_FALSE(r.tools->parallel);
  r = MustParse(kChat,
                WithTools(R"("tool_choice":{"type":"function","function":{"name":"get-time"}})"));
  EXPECT_EQ(r.tools->choice.kind, ToolChoice::Kind::kNamed);
  EXPECT_EQ(r.tools->choice.name, "get-time");
  EXPECT_EQ(MustParse(kChat, WithTools(R"("tool_choice":"none")")).tools->choice.kind,
            ToolChoice::Kind::kNone);
  // No tools: none/auto accepted, nothing to do.
  EXPECT_FALSE(MustParse(kChat, ChatWith(R"("tools":[],"tool_choice":"auto")")).tools);
}

TEST(OpenAiToolsParse, Errors) {
  struct Case {
    std::string body, param, code;
  };
  const std::vector<Case> cases = {
      {ChatWith(R"("tools":{})"), "tools", "invalid_type"},
      {ChatWith(R"("tools":[{"type":"retrieval"}])"), "tools[0].type", "invalid_value"},
      {ChatWith(R"("tools":[{"type":"function"}])"), "tools[0].function",
       "missing_required_parameter"},
      {ChatWith(R"("tools":[{"type":"function","function":{"name":"a b"}}])"),
       "tools[0].function.name", "invalid_value"},
      {ChatWith(R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}])"),
       "tools[0].function.parameters", "invalid_type"},
      {ChatWith(R"("tools":[{"type":"function","function":{"name":"f","x":1}}])"),
       "tools[0].function.x", "unknown_parameter"},
      {WithTools(R"("tool_choice":"sometimes")"), "tool_choice", "invalid_value"},
      {WithTools(R"("tool_choice":{"type":"function","function":{"name":"nope"}})"),
       "tool_choice.function.name", "invalid_value"},
      {ChatWith(R"("tool_choice":"required")"), "tool_choice", "invalid_value"},
      {WithTools(R"("parallel_tool_calls":"yes")"), "parallel_tool_calls", "invalid_type"},
      {ChatWith(std::string(R"("tools":[)") + kTime + "," + kTime + "]"), "tools[1].function.name",
       "invalid_value"},
  };
  for (const Case& c : cases) {
    ApiError e = MustFail(kChat, c.body);
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_EQ(e.code, c.code) << c.body << ": " << e.message;
  }
}

TEST(OpenAiToolsParse, AssistantToolCallsInHistory) {
  const std::string body = R"({"model":"m","messages":[
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"sunny"}]})";
  ApiRequest r = MustParse(kChat, body);
  const Json& calls = r.messages[1]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(
      MustFail(kChat, R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{}]}]})").param,
      "messages[0].tool_calls[0].function");
}

TEST(OpenAiToolsAuto, TriggerFollowsTheTemplatesConvention) {
  // Hermes / Qwen templates render calls in <tool_call> tags: that marker.
  const char* hermes_source =
      "{%- for tool_call in message.tool_calls %}<tool_call>\n{{ tool_call | tojson }}\n"
      "</tool_call>{%- endfor %}";
  const char* plain_source =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
      "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}";
  for (bool parallel : {false, true}) {
    const AutoToolCalls hermes = AutoToolCallFormat(hermes_source, parallel);
    EXPECT_EQ(hermes.trigger.text, "<tool_call>");
    EXPECT_FALSE(hermes.trigger.at_start);
    EXPECT_FALSE(hermes.trigger.in_grammar);
    EXPECT_TRUE(hermes.trigger.alt_text.empty());
    EXPECT_EQ(hermes.shape, ToolCallShape::kOne);
    // Several calls: one after another, in the template's tags.
    EXPECT_EQ(hermes.separator, parallel ? "\n</tool_call>\n<tool_call>\n" : "");
    // ... and the answer may end after a call's closing tag.
    EXPECT_EQ(hermes.separator_end, parallel ? 13u : 0u);
    // No marker (SmolLM2's template): a call object at the start of the
    // answer, or with parallel calls also an array of them.
    const AutoToolCalls plain = AutoToolCallFormat(plain_source, parallel);
    EXPECT_EQ(plain.trigger.text, "{\"name\"");
    EXPECT_TRUE(plain.trigger.at_start);
    EXPECT_TRUE(plain.trigger.in_grammar);
    EXPECT_EQ(plain.trigger.alt_text, parallel ? "[{\"name\"" : "");
    EXPECT_EQ(plain.shape, parallel ? ToolCallShape::kOneOrArray : ToolCallShape::kOne);
    EXPECT_TRUE(plain.separator.empty());
  }
}

TEST(OpenAiToolsSchema, OneCallAnyToolOrAList) {
  ApiRequest r = MustParse(kChat, WithTools(""));
  const auto& tools = r.tools->tools;
  Json one = Json::parse(ToolCallSchema(tools, nullptr, ToolCallShape::kOne));
  ASSERT_EQ(one["anyOf"].size(), 2u);
  EXPECT_EQ(one["anyOf"][0]["properties"]["name"]["const"], "get_weather");
  EXPECT_EQ(one["anyOf"][0]["properties"]["arguments"]["required"][0], "city");
  EXPECT_EQ(one["anyOf"][0]["required"], Json::array({"name", "arguments"}));
  Json list = Json::parse(ToolCallSchema(tools, nullptr, ToolCallShape::kArray));
  EXPECT_EQ(list["type"], "array");
  EXPECT_EQ(list["minItems"], 1);
  const std::string name = "get-time";
  Json named = Json::parse(ToolCallSchema(tools, &name, ToolCallShape::kArray));  // still one
  EXPECT_EQ(named["properties"]["name"]["const"], "get-time");
  Json either = Json::parse(ToolCallSchema(tools, nullptr, ToolCallShape::kOneOrArray));
  EXPECT_EQ(either["anyOf"][0], one);
  EXPECT_EQ(either["anyOf"][1]["type"], "array");
  for (const Json& s : {one, list, named, either}) {
    auto c = CompileJsonSchema(s);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_TRUE(c->unenforced.empty());
  }
}

// Found by vLLM's function-calling tests: a tool whose parameters refer to
// their own $defs ("#/$defs/...") must still resolve once nested in the
// tool-call schema, in every shape that schema takes.
TEST(OpenAiToolsSchema, LocalRefsInParametersStillResolve) {
  const char* with_defs = R"({"type":"function","function":{"name":"weather",
      "parameters":{"type":"object","$defs":{"Opts":{"type":"object",
        "properties":{"unit":{"enum":["c","f"]},"more":{"anyOf":[{"$ref":"#/$defs/Opts"},
        {"type":"null"}]}}}},
      "properties":{"city":{"type":"string"},"options":{"$ref":"#/$defs/Opts"},
                    "self":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
      "required":["city"]}}})";
  ApiRequest r =
      MustParse(kChat, ChatWith(std::string(R"("tools":[)") + with_defs + "," + kWeather + "]"));
  const auto& tools = r.tools->tools;
  const std::string name = "weather";
  std::vector<std::vector<ToolDef>> sets = {tools, {tools[0]}};
  for (const auto& set : sets) {
    for (ToolCallShape shape :
         {ToolCallShape::kOne, ToolCallShape::kArray, ToolCallShape::kOneOrArray}) {
      for (const std::string* named : {static_cast<const std::string*>(nullptr), &name}) {
        const std::string schema = ToolCallSchema(set, named, shape);
        auto c = CompileJsonSchemaText(schema);
        EXPECT_TRUE(c.ok()) << c.status().ToString() << "\n" << schema;
      }
    }
  }
  Json one = Json::parse(ToolCallSchema(tools, nullptr, ToolCallShape::kArray));
  EXPECT_EQ(one["items"]["anyOf"][0]["properties"]["arguments"]["properties"]["options"]["$ref"],
            "#/items/anyOf/0/properties/arguments/$defs/Opts");
  EXPECT_EQ(
      one["items"]["anyOf"][0]["properties"]["arguments"]["properties"]["self"]["anyOf"][0]["$ref"],
      "#/items/anyOf/0/properties/arguments");
}

TEST(OpenAiToolsSchema, CallIds) {
  const std::string a = NewToolCallId(), b = NewToolCallId();
  EXPECT_EQ(a.rfind("call_", 0), 0u);
  EXPECT_EQ(a.size(), 29u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace brisk::api
