// Invalid requests, one class of client mistake each: the 400 names the
// field, the code and what was expected.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/openai_request.h"
#include "server/openai_test_util.h"

namespace brisk::api {
namespace {

using namespace test_util;

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
  const std::vector<Case> cases = {
      {kChat, ChatWith(R"("functions":[{"name":"f"}])"), "functions"},
      {kChat, ChatWith(R"("function_call":{"name":"f"})"), "function_call"},
      {kChat, ChatWith(R"("audio":{"voice":"alloy","format":"wav"})"), "audio"},
      {kChat, ChatWith(R"("modalities":["text","audio"])"), "modalities[1]"},
      {kChat, ChatWith(R"("prediction":{"type":"content","content":"x"})"), "prediction"},
      {kChat, ChatWith(R"("reasoning_effort":"low")"), "reasoning_effort"},
      {kChat,
       R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url",
           "image_url":{"url":"http://x"}}]}]})",
       "messages[0].content[0].type"},
      {kCompl, ComplWith(R"("suffix":"end")"), "suffix"},
      {kCompl, ComplWith(R"("best_of":3)"), "best_of"},
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
  // Nesting stops at kMaxJsonDepth, closed or not.
  std::string deep(100000, '[');
  EXPECT_EQ(MustFail(kChat, deep).code, "json_too_complex");
  deep += std::string(100000, ']');
  EXPECT_EQ(MustFail(kChat, deep).code, "json_too_complex");
  EXPECT_LT(MustFail(kChat, deep).param.size(), 200u);
  std::string long_key = ChatWith(fmt::format("\"{}\":1", std::string(10000, 'k')));
  ApiError e = MustFail(kChat, long_key);
  EXPECT_LT(e.message.size(), 200u);  // the quoted name is cut
  EXPECT_LT(e.param.size(), 100u);
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("temperature":1e400)")).code, "invalid_json");
}

}  // namespace
}  // namespace brisk::api
