#include "server/openai_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace brisk::api {
namespace {

using Json = nlohmann::ordered_json;

constexpr Endpoint kChat = Endpoint::kChatCompletions;
constexpr Endpoint kCompl = Endpoint::kCompletions;

ApiRequest MustParse(Endpoint ep, std::string_view body) {
  auto r = ParseRequest(ep, body);
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << "unexpected error for " << body << ": " << e->message;
    return {};
  }
  return std::get<ApiRequest>(std::move(r));
}

ApiError MustFail(Endpoint ep, std::string_view body) {
  auto r = ParseRequest(ep, body);
  if (!std::holds_alternative<ApiError>(r)) {
    ADD_FAILURE() << "expected an error for " << body;
    return {};
  }
  ApiError e = std::get<ApiError>(std::move(r));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.type, "invalid_request_error");
  EXPECT_FALSE(e.message.empty());
  return e;
}

// A chat body with `extra` (a JSON object's members, no braces) added.
std::string ChatWith(std::string_view extra) {
  std::string s = R"({"model":"m","messages":[{"role":"user","content":"hi"}])";
  if (!extra.empty()) s += "," + std::string(extra);
  return s + "}";
}
std::string ComplWith(std::string_view extra) {
  std::string s = R"({"model":"m","prompt":"Once upon")";
  if (!extra.empty()) s += "," + std::string(extra);
  return s + "}";
}

Json ParseJson(const std::string& s) {
  Json j = Json::parse(s, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << s;
  return j;
}

// Strips "data: " and "\n\n" and parses the JSON in between.
Json ParseSse(const std::string& event) {
  EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
  EXPECT_GE(event.size(), 8u);
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n");
  const std::string payload = event.substr(6, event.size() - 8);
  EXPECT_EQ(payload.find('\n'), std::string::npos) << "one line per event";
  return ParseJson(payload);
}

// ---------------------------------------------------------------- valid requests

TEST(OpenAiApiParseTest, MinimalChat) {
  ApiRequest r = MustParse(kChat, ChatWith(""));
  EXPECT_EQ(r.endpoint, kChat);
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0]["role"], "user");
  EXPECT_EQ(r.messages[0]["content"], "hi");
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_TRUE(r.stop.empty());
  EXPECT_FLOAT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_FALSE(r.sampling.seed.has_value());
  EXPECT_FALSE(r.priority.has_value());
  EXPECT_FALSE(r.timeout_s.has_value());
}

// What openai-python sends for
// client.chat.completions.create(model=..., messages=..., stream=True,
//   stream_options={"include_usage": True}, n=2, stop=["\n\n", "END"],
//   max_completion_tokens=64, temperature=0.7, top_p=0.9, seed=42,
//   frequency_penalty=0.5, presence_penalty=-0.5, user="u1")
TEST(OpenAiApiParseTest, OpenAiPythonChatPayload) {
  ApiRequest r = MustParse(kChat, R"({
    "messages": [
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "Hello", "name": "alice"},
      {"role": "assistant", "content": "Hi!"},
      {"role": "user", "content": "Tell me a joke."}
    ],
    "model": "smollm2",
    "frequency_penalty": 0.5,
    "max_completion_tokens": 64,
    "n": 2,
    "presence_penalty": -0.5,
    "seed": 42,
    "stop": ["\n\n", "END"],
    "stream": true,
    "stream_options": {"include_usage": true},
    "temperature": 0.7,
    "top_p": 0.9,
    "user": "u1"
  })");
  EXPECT_EQ(r.model, "smollm2");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[1]["name"], "alice");
  EXPECT_EQ(r.messages[3]["content"], "Tell me a joke.");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.max_tokens, 64);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.seed, 42u);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, -0.5f);
  EXPECT_EQ(r.user, "u1");
  EXPECT_TRUE(r.sampling.Validate().ok());
}

TEST(OpenAiApiParseTest, StopAsString) {
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("stop":"###")")).stop, (std::vector<std::string>{"###"}));
  EXPECT_TRUE(MustParse(kChat, ChatWith(R"("stop":[])")).stop.empty());
}

TEST(OpenAiApiParseTest, MaxTokensLegacyAndBoth) {
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("max_tokens":16)")).max_tokens, 16);
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("max_tokens":16,"max_completion_tokens":16)")).max_tokens,
            16);
  ApiError e = MustFail(kChat, ChatWith(R"("max_tokens":16,"max_completion_tokens":32)"));
  EXPECT_EQ(e.param, "max_completion_tokens");
}

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

TEST(OpenAiApiParseTest, NullMeansAbsent) {
  ApiRequest r = MustParse(
      kChat, ChatWith(R"("temperature":null,"top_p":null,"n":null,"stop":null,"max_tokens":null,
               "seed":null,"stream":null,"stream_options":null,"tools":null,"tool_choice":null,
               "logprobs":null,"top_logprobs":null,"logit_bias":null,"response_format":null,
               "user":null,"metadata":null,"priority":null,"timeout":null,"audio":null,
               "modalities":null,"parallel_tool_calls":null,"functions":null)"));
  EXPECT_EQ(r.n, 1);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_FALSE(r.max_tokens.has_value());
}

TEST(OpenAiApiParseTest, HarmlessFieldsAccepted) {
  MustParse(kChat, ChatWith(R"("user":"x","metadata":{"k":"v"},"store":false,
      "service_tier":"auto","parallel_tool_calls":false,"stream_options":{"include_usage":false},
      "prompt_cache_key":"abc","safety_identifier":"s","tools":[],"tool_choice":"none",
      "logit_bias":{},"logprobs":false,"top_logprobs":0,"response_format":{"type":"text"},
      "modalities":["text"])"));
  MustParse(kCompl, ComplWith(R"("echo":false,"suffix":"","best_of":1,"user":"x","store":true)"));
}

TEST(OpenAiApiParseTest, Extensions) {
  ApiRequest r = MustParse(kChat, ChatWith(R"("top_k":40,"min_p":0.05,"repetition_penalty":1.1,
      "ignore_eos":true,"priority":"batch","timeout":2.5)"));
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(r.sampling.repetition_penalty, 1.1f);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_EQ(r.priority, Priority::kBatch);
  EXPECT_EQ(r.timeout_s, 2.5);
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("top_k":-1)")).sampling.top_k, 0);
}

TEST(OpenAiApiParseTest, IntegralFloatsAreIntegers) {
  ApiRequest r = MustParse(kChat, ChatWith(R"("n":2.0,"max_tokens":16.0,"seed":7.0)"));
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_EQ(r.sampling.seed, 7u);
}

TEST(OpenAiApiParseTest, SeedIsInt64) {
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("seed":-1)")).sampling.seed,
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("seed":9223372036854775807)")).sampling.seed,
            9223372036854775807u);
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("seed":9223372036854775808)")).param, "seed");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("seed":1e30)")).param, "seed");
}

TEST(OpenAiApiParseTest, IncludeUsageOnlyWhenStreaming) {
  EXPECT_FALSE(
      MustParse(kChat, ChatWith(R"("stream_options":{"include_usage":true})")).include_usage);
  EXPECT_TRUE(MustParse(kChat, ChatWith(R"("stream":true,"stream_options":{"include_usage":true})"))
                  .include_usage);
}

TEST(OpenAiApiParseTest, SamplingBoundsInclusive) {
  ApiRequest r = MustParse(kChat, ChatWith(R"("temperature":0,"top_p":1,"frequency_penalty":-2,
      "presence_penalty":2,"min_p":1,"repetition_penalty":10)"));
  EXPECT_TRUE(r.sampling.greedy());
  EXPECT_TRUE(r.sampling.Validate().ok());
  EXPECT_FLOAT_EQ(MustParse(kChat, ChatWith(R"("temperature":2)")).sampling.temperature, 2.0f);
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

TEST(OpenAiApiParseTest, ParsePriority) {
  EXPECT_EQ(*ParsePriority("interactive"), Priority::kInteractive);
  EXPECT_EQ(*ParsePriority("Batch"), Priority::kBatch);
  EXPECT_FALSE(ParsePriority("urgent").ok());
  EXPECT_FALSE(ParsePriority("").ok());
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("priority":"urgent")")).param, "priority");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("priority":1)")).code, "invalid_type");
}

// ---------------------------------------------------------------- errors, one class each

TEST(OpenAiApiErrorTest, MalformedJsonHasByteOffset) {
  ApiError e = MustFail(kChat, R"({"model":"m", oops})");
  EXPECT_EQ(e.code, "invalid_json");
  EXPECT_NE(e.message.find("at byte offset 14"), std::string::npos) << e.message;
  EXPECT_EQ(MustFail(kChat, "").code, "invalid_json");
  EXPECT_EQ(MustFail(kChat, ChatWith("") + " trailing").code, "invalid_json");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m")").code, "invalid_json");
  // A lone surrogate escape is not valid JSON text.
  EXPECT_EQ(MustFail(kChat, R"({"model":"\ud800","messages":[]})").code, "invalid_json");
}

TEST(OpenAiApiErrorTest, TopLevelNotAnObject) {
  for (const char* body : {"[]", "1", "\"s\"", "null", "true"}) {
    ApiError e = MustFail(kChat, body);
    EXPECT_EQ(e.code, "invalid_type") << body;
    EXPECT_NE(e.message.find("JSON object"), std::string::npos);
  }
}

TEST(OpenAiApiErrorTest, InvalidUtf8Anywhere) {
  std::string body = ChatWith("");
  for (std::string bad : {"\xFF", "\xC3", "\xED\xA0\x80", "\xC0\xAF", "\xF4\x90\x80\x80"}) {
    std::string b = body;
    b.insert(b.find("hi"), bad);  // inside a string
    ApiError e = MustFail(kChat, b);
    EXPECT_EQ(e.code, "invalid_encoding");
    EXPECT_NE(e.message.find("UTF-8"), std::string::npos);
  }
  EXPECT_EQ(MustFail(kChat, body + "\xFF").code, "invalid_encoding");  // outside any string
}

TEST(OpenAiApiErrorTest, WrongTypesNameFieldAndType) {
  ApiError e = MustFail(kChat, ChatWith(R"("temperature":"0.5")"));
  EXPECT_EQ(e.message, "'temperature' must be a number, got string");
  EXPECT_EQ(e.param, "temperature");
  EXPECT_EQ(e.code, "invalid_type");

  struct Case {
    const char* extra;
    const char* param;
  };
  for (const Case& c : std::initializer_list<Case>{
           {R"("n":true)", "n"},  // booleans are not numbers
           {R"("n":1.5)", "n"},
           {R"("max_tokens":"16")", "max_tokens"},
           {R"("stream":1)", "stream"},
           {R"("stop":5)", "stop"},
           {R"("stop":["a",1])", "stop[1]"},
           {R"("top_p":[1])", "top_p"},
           {R"("seed":"1")", "seed"},
           {R"("user":5)", "user"},
           {R"("ignore_eos":"yes")", "ignore_eos"},
           {R"("timeout":"1")", "timeout"},
           {R"("stream_options":true)", "stream_options"},
           {R"("stream_options":{"include_usage":"yes"})", "stream_options.include_usage"},
           {R"("metadata":[])", "metadata"},
           {R"("tools":{})", "tools"},
           {R"("logprobs":1)", "logprobs"},
       }) {
    ApiError err = MustFail(kChat, ChatWith(c.extra));
    EXPECT_EQ(err.code, "invalid_type") << c.extra << ": " << err.message;
    EXPECT_EQ(err.param, c.param) << c.extra;
    EXPECT_NE(err.message.find(c.param), std::string::npos) << err.message;
  }
  EXPECT_EQ(MustFail(kChat, R"({"model":5,"messages":[]})").param, "model");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":{}})").param, "messages");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":["hi"]})").param, "messages[0]");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":[{"role":"user","content":5}]})").param,
            "messages[0].content");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":[{"role":1,"content":"x"}]})").param,
            "messages[0].role");
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m","prompt":5})").param, "prompt");
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m","prompt":["a",1]})").param, "prompt[1]");
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m","prompt":[1,"a"]})").param, "prompt[1]");
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m","prompt":[[1],2]})").param, "prompt[1]");
}

TEST(OpenAiApiErrorTest, OutOfRangeNamesTheRange) {
  ApiError e = MustFail(kChat, ChatWith(R"("temperature":2.5)"));
  EXPECT_EQ(e.message, "'temperature' must be in [0, 2], got 2.5");
  EXPECT_EQ(e.code, "invalid_value");
  e = MustFail(kChat, ChatWith(R"("top_p":0)"));
  EXPECT_EQ(e.message, "'top_p' must be in (0, 1], got 0");
  e = MustFail(kChat, ChatWith(R"("n":0)"));
  EXPECT_EQ(e.message, "'n' must be in [1, 128], got 0");
  e = MustFail(kChat, ChatWith(R"("n":129)"));
  EXPECT_EQ(e.param, "n");
  e = MustFail(kChat, ChatWith(R"("max_tokens":0)"));
  EXPECT_EQ(e.message, "'max_tokens' must be >= 1, got 0");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("max_tokens":-5)")).param, "max_tokens");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("max_completion_tokens":0)")).param,
            "max_completion_tokens");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("max_tokens":4294967296)")).param, "max_tokens");
  for (const char* extra :
       {R"("temperature":-0.1)", R"("top_p":1.01)", R"("frequency_penalty":2.1)",
        R"("presence_penalty":-3)", R"("min_p":1.5)", R"("repetition_penalty":0)",
        R"("repetition_penalty":11)", R"("top_k":-2)", R"("timeout":0)", R"("timeout":-1)",
        R"("timeout":1e9)"}) {
    ApiError err = MustFail(kChat, ChatWith(extra));
    EXPECT_EQ(err.code, "invalid_value") << extra;
    EXPECT_NE(err.message.find("must be"), std::string::npos) << err.message;
  }
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("top_p":1e-60)")).code, "invalid_value");  // 0.0f
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m","prompt":[-1]})").param, "prompt[0]");
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m","prompt":""})").param, "prompt");
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m","prompt":["a",""]})").param, "prompt[1]");
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m","prompt":[2147483648]})").param, "prompt[0]");
}

TEST(OpenAiApiErrorTest, MissingRequired) {
  ApiError e = MustFail(kChat, R"({"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(e.param, "model");
  EXPECT_EQ(e.code, "missing_required_parameter");
  EXPECT_EQ(MustFail(kChat, R"({"model":null,"messages":[]})").param, "model");
  EXPECT_EQ(MustFail(kChat, R"({"model":"","messages":[{"role":"user","content":"x"}]})").param,
            "model");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m"})").param, "messages");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":null})").param, "messages");
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m"})").param, "prompt");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":[{"content":"x"}]})").param,
            "messages[0].role");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":[{"role":"user"}]})").param,
            "messages[0].content");
  EXPECT_EQ(
      MustFail(kChat, R"({"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]})")
          .param,
      "messages[0].content[0].text");
}

TEST(OpenAiApiErrorTest, EmptyArrays) {
  ApiError e = MustFail(kChat, R"({"model":"m","messages":[]})");
  EXPECT_EQ(e.param, "messages");
  EXPECT_EQ(e.code, "empty_array");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":[{"role":"user","content":[]}]})").code,
            "empty_array");
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m","prompt":[]})").code, "empty_array");
  EXPECT_EQ(MustFail(kCompl, R"({"model":"m","prompt":[[1],[]]})").param, "prompt[1]");
}

TEST(OpenAiApiErrorTest, BadRoleAndStop) {
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":[{"role":"robot","content":"x"}]})").code,
            "invalid_value");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("stop":["a","b","c","d","e"])")).param, "stop");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("stop":"")")).param, "stop");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("stop":["a",""])")).param, "stop[1]");
}

TEST(OpenAiApiErrorTest, UnknownFields) {
  ApiError e = MustFail(kChat, ChatWith(R"("temprature":0.5)"));
  EXPECT_EQ(e.message, "Unrecognized request argument supplied: temprature");
  EXPECT_EQ(e.param, "temprature");
  // Even null: a typo should not pass silently.
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("foo":null)")).param, "foo");
  // Each endpoint's own fields only.
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("prompt":"x")")).param, "prompt");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("echo":false)")).param, "echo");
  EXPECT_EQ(MustFail(kCompl, ComplWith(R"("messages":[])")).param, "messages");
  EXPECT_EQ(MustFail(kCompl, ComplWith(R"("max_completion_tokens":5)")).param,
            "max_completion_tokens");
  EXPECT_EQ(MustFail(kCompl, ComplWith(R"("tools":[])")).param, "tools");
  // Nested objects we interpret are checked too.
  EXPECT_EQ(
      MustFail(kChat, R"({"model":"m","messages":[{"role":"user","content":"x","x":1}]})").param,
      "messages[0].x");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("stream_options":{"include_usge":true})")).param,
            "stream_options.include_usge");
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":[{"role":"user","content":"x",
                                "tool_call_id":"c"}]})")
                .param,
            "messages[0].tool_call_id");
}

TEST(OpenAiApiErrorTest, UnsupportedFeatures) {
  struct Case {
    Endpoint ep;
    std::string body;
    const char* param;
  };
  const std::string tool =
      R"({"type":"function","function":{"name":"f","parameters":{"type":"object"}}})";
  const std::vector<Case> cases = {
      {kChat, ChatWith(R"("tools":[)" + tool + "]"), "tools"},
      {kChat, ChatWith(R"("tool_choice":"required")"), "tool_choice"},
      {kChat, ChatWith(R"("tool_choice":{"type":"function","function":{"name":"f"}})"),
       "tool_choice"},
      {kChat, ChatWith(R"("functions":[{"name":"f"}])"), "functions"},
      {kChat, ChatWith(R"("function_call":{"name":"f"})"), "function_call"},
      {kChat, ChatWith(R"("response_format":{"type":"json_object"})"), "response_format"},
      {kChat, ChatWith(R"("response_format":{"type":"json_schema","json_schema":{}})"),
       "response_format"},
      {kChat, ChatWith(R"("logit_bias":{"50256":-100})"), "logit_bias"},
      {kChat, ChatWith(R"("logprobs":true)"), "logprobs"},
      {kChat, ChatWith(R"("top_logprobs":3)"), "top_logprobs"},
      {kChat, ChatWith(R"("audio":{"voice":"alloy","format":"wav"})"), "audio"},
      {kChat, ChatWith(R"("modalities":["text","audio"])"), "modalities[1]"},
      {kChat, ChatWith(R"("parallel_tool_calls":true)"), "parallel_tool_calls"},
      {kChat, ChatWith(R"("prediction":{"type":"content","content":"x"})"), "prediction"},
      {kChat, ChatWith(R"("reasoning_effort":"low")"), "reasoning_effort"},
      {kChat,
       R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url",
           "image_url":{"url":"http://x"}}]}]})",
       "messages[0].content[0].type"},
      {kChat,
       R"({"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c"}]}]})",
       "messages[0].tool_calls"},
      {kCompl, ComplWith(R"("echo":true)"), "echo"},
      {kCompl, ComplWith(R"("logprobs":0)"), "logprobs"},
      {kCompl, ComplWith(R"("logprobs":5)"), "logprobs"},
      {kCompl, ComplWith(R"("suffix":"end")"), "suffix"},
      {kCompl, ComplWith(R"("best_of":3)"), "best_of"},
      {kCompl, ComplWith(R"("logit_bias":{"1":1})"), "logit_bias"},
  };
  for (const Case& c : cases) {
    ApiError e = MustFail(c.ep, c.body);
    EXPECT_EQ(e.code, "unsupported") << c.body << ": " << e.message;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(e.message.find("not supported"), std::string::npos) << e.message;
  }
  // A bad value of a known-unsupported field is still a plain range error.
  EXPECT_EQ(MustFail(kCompl, ComplWith(R"("logprobs":6)")).code, "invalid_value");
  EXPECT_EQ(MustFail(kCompl, ComplWith(R"("best_of":0)")).code, "invalid_value");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("response_format":{"type":"xml"})")).code, "invalid_value");
}

TEST(OpenAiApiErrorTest, HugeAndDeepInputsDoNotCrash) {
  std::string deep(100000, '[');
  EXPECT_EQ(MustFail(kChat, deep).code, "invalid_json");
  deep += std::string(100000, ']');
  EXPECT_EQ(MustFail(kChat, deep).code, "invalid_type");
  std::string long_key = ChatWith("\"" + std::string(10000, 'k') + "\":1");
  ApiError e = MustFail(kChat, long_key);
  EXPECT_LT(e.message.size(), 200u);  // the quoted name is cut
  EXPECT_LT(e.param.size(), 100u);
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("temperature":1e400)")).code, "invalid_json");
}

// ---------------------------------------------------------------- responses

TEST(OpenAiApiResponseTest, ErrorBody) {
  ApiError e;
  e.message = "'n' must be in [1, 128], got 0";
  e.param = "n";
  e.code = "invalid_value";
  Json j = ParseJson(ErrorBody(e));
  EXPECT_EQ(
      j.dump(),
      R"({"error":{"message":"'n' must be in [1, 128], got 0","type":"invalid_request_error","param":"n","code":"invalid_value"}})");
  ApiError bare;
  bare.http_status = 500;
  bare.type = "server_error";
  bare.message = "boom";
  j = ParseJson(ErrorBody(bare));
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_EQ(j["error"]["type"], "server_error");
}

TEST(OpenAiApiResponseTest, ErrorFromParseRoundTrips) {
  ApiError e = MustFail(kChat, ChatWith(R"("temperature":"hot")"));
  Json j = ParseJson(ErrorBody(e));
  EXPECT_EQ(j["error"]["param"], "temperature");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
}

TEST(OpenAiApiResponseTest, Models) {
  Json j = ParseJson(ModelsBody({"a", "b"}, 1700000000));
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["id"], "b");
  EXPECT_EQ(j["data"][1]["object"], "model");
  EXPECT_EQ(j["data"][1]["created"], 1700000000);
  EXPECT_TRUE(j["data"][1]["owned_by"].is_string());
}

TEST(OpenAiApiResponseTest, ChatCompletionBody) {
  Usage u{.prompt_tokens = 10, .completion_tokens = 5, .cached_tokens = 4};
  std::string s = CompletionBody(kChat, "chatcmpl-abc", "smollm2", 1700000000,
                                 {{0, "Hello \"world\"\n", "stop"}, {1, "Hi", "length"}}, u);
  Json j = ParseJson(s);
  EXPECT_EQ(j["id"], "chatcmpl-abc");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "smollm2");
  ASSERT_EQ(j["choices"].size(), 2u);
  const Json& c0 = j["choices"][0];
  EXPECT_EQ(c0["index"], 0);
  EXPECT_EQ(c0["message"]["role"], "assistant");
  EXPECT_EQ(c0["message"]["content"], "Hello \"world\"\n");
  EXPECT_EQ(c0["finish_reason"], "stop");
  EXPECT_TRUE(c0.contains("logprobs") && c0["logprobs"].is_null());
  EXPECT_EQ(j["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 10);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["usage"]["total_tokens"], 15);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
  EXPECT_TRUE(j["system_fingerprint"].is_string());
  EXPECT_EQ(s.find('\n'), std::string::npos);  // compact
}

TEST(OpenAiApiResponseTest, TextCompletionBody) {
  Json j =
      ParseJson(CompletionBody(kCompl, "cmpl-x", "m", 5, {{0, " there", "length"}}, {3, 1, 0}));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], " there");
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(j["choices"][0].contains("message"));
  EXPECT_EQ(j["usage"]["total_tokens"], 4);
}

TEST(OpenAiApiResponseTest, InvalidUtf8IsReplaced) {
  std::string s = CompletionBody(kChat, "id", "m\xFF", 0, {{0, "a\xC3", "stop"}}, {});
  Json j = ParseJson(s);
  EXPECT_EQ(j["model"], "m\xEF\xBF\xBD");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "a\xEF\xBF\xBD");
}

TEST(OpenAiApiResponseTest, ChatChunksExact) {
  EXPECT_EQ(SseChunk(kChat, "chatcmpl-1", "m", 7, 0, "assistant", "", std::nullopt),
            "data: "
            R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m",)"
            R"("system_fingerprint":"brisk","choices":[{"index":0,"delta":{"role":"assistant",)"
            R"("content":""},"logprobs":null,"finish_reason":null}]})"
            "\n\n");
  Json mid =
      ParseSse(SseChunk(kChat, "chatcmpl-1", "m", 7, 1, std::nullopt, "Hel\nlo", std::nullopt));
  EXPECT_EQ(mid["choices"][0]["index"], 1);
  EXPECT_EQ(mid["choices"][0]["delta"].dump(), R"({"content":"Hel\nlo"})");
  EXPECT_TRUE(mid["choices"][0]["finish_reason"].is_null());
  Json last = ParseSse(SseChunk(kChat, "chatcmpl-1", "m", 7, 0, std::nullopt, "", "stop"));
  EXPECT_EQ(last["choices"][0]["delta"].dump(), "{}");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(last.contains("usage"));
}

TEST(OpenAiApiResponseTest, CompletionChunks) {
  Json c = ParseSse(SseChunk(kCompl, "cmpl-1", "m", 7, 2, "assistant", " tok", std::nullopt));
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], " tok");
  EXPECT_EQ(c["choices"][0]["index"], 2);
  EXPECT_FALSE(c["choices"][0].contains("delta"));
  Json last = ParseSse(SseChunk(kCompl, "cmpl-1", "m", 7, 0, std::nullopt, "", "length"));
  EXPECT_EQ(last["choices"][0]["text"], "");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
}

TEST(OpenAiApiResponseTest, UsageChunk) {
  Json j = ParseSse(SseUsageChunk(kChat, "chatcmpl-1", "m", 7, {12, 3, 8}));
  EXPECT_EQ(j["object"], "chat.completion.chunk");
  ASSERT_TRUE(j["choices"].is_array());
  EXPECT_TRUE(j["choices"].empty());
  EXPECT_EQ(j["usage"]["total_tokens"], 15);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
  Json k = ParseSse(SseUsageChunk(kCompl, "cmpl-1", "m", 7, {1, 2, 0}));
  EXPECT_EQ(k["object"], "text_completion");
  EXPECT_TRUE(k["choices"].empty());
}

TEST(OpenAiApiResponseTest, SseErrorAndDone) {
  ApiError e;
  e.http_status = 503;
  e.type = "server_error";
  e.message = "engine stopped";
  EXPECT_EQ(
      SseError(e),
      "data: "
      R"({"error":{"message":"engine stopped","type":"server_error","param":null,"code":null}})"
      "\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(OpenAiApiResponseTest, RequestIds) {
  std::string a = NewRequestId(kChat), b = NewRequestId(kChat), c = NewRequestId(kCompl);
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 9u + 24u);
  EXPECT_EQ(c.rfind("cmpl-", 0), 0u);
  EXPECT_EQ(c.size(), 5u + 24u);
  EXPECT_NE(a, b);
  for (char ch : a.substr(9)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch)));
}

}  // namespace
}  // namespace brisk::api
