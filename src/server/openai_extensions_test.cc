// Request fields beyond the basic ones: logit_bias, the vLLM extensions,
// the exact seed range, and unknown fields in both modes.
#include "server/openai_extensions.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "server/openai_test_util.h"

namespace brisk::api {
namespace {

using namespace test_util;

using Bias = std::vector<std::pair<int32_t, float>>;

TEST(OpenAiLogitBiasTest, ParsedSortedOnBothEndpoints) {
  ApiRequest r =
      MustParse(kChat, ChatWith(R"("logit_bias":{"50256":-100,"7":100,"0":0.5,"0012":-1.25})"));
  EXPECT_EQ(r.sampling.logit_bias, (Bias{{0, 0.5f}, {7, 100.0f}, {12, -1.25f}, {50256, -100.0f}}));
  EXPECT_TRUE(r.sampling.Validate().ok());
  r = MustParse(kCompl, ComplWith(R"("logit_bias":{"2147483647":3})"));
  EXPECT_EQ(r.sampling.logit_bias, (Bias{{2147483647, 3.0f}}));
  EXPECT_TRUE(MustParse(kChat, ChatWith(R"("logit_bias":{})")).sampling.logit_bias.empty());
  EXPECT_TRUE(MustParse(kChat, ChatWith(R"("logit_bias":null)")).sampling.logit_bias.empty());
}

TEST(OpenAiLogitBiasTest, BadKeysAndValuesAreNamed) {
  struct Case {
    const char* extra;
    const char* param;
    const char* needle;
  };
  const Case cases[] = {
      {R"("logit_bias":[1,2])", "logit_bias", "must be an object"},
      {R"("logit_bias":{"abc":1})", "logit_bias.abc", "must be token ids"},
      {R"("logit_bias":{"-1":1})", "logit_bias.-1", "must be token ids"},
      {R"("logit_bias":{"":1})", "logit_bias.", "must be token ids"},
      {R"("logit_bias":{"1.5":1})", "logit_bias.1.5", "must be token ids"},
      {R"("logit_bias":{"2147483648":1})", "logit_bias.2147483648", "must be token ids"},
      {R"("logit_bias":{"5":100.5})", "logit_bias.5", "must be in [-100, 100]"},
      {R"("logit_bias":{"5":-101})", "logit_bias.5", "must be in [-100, 100]"},
      {R"("logit_bias":{"5":"1"})", "logit_bias.5", "must be a number"},
      {R"("logit_bias":{"5":true})", "logit_bias.5", "must be a number"},
      {R"("logit_bias":{"5":1,"05":2})", "logit_bias", "names token id 5 twice"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.extra);
    for (Endpoint ep : {kChat, kCompl}) {
      ApiError e = MustFail(ep, ep == kChat ? ChatWith(c.extra) : ComplWith(c.extra));
      EXPECT_EQ(e.param, c.param);
      EXPECT_NE(e.message.find(c.needle), std::string::npos) << e.message;
    }
  }
}

TEST(OpenAiVllmExtensionsTest, Parsed) {
  ApiRequest r = MustParse(kChat, ChatWith(R"("max_tokens":10,"min_tokens":10,
      "stop_token_ids":[2,0,49151],"include_stop_str_in_output":true,
      "skip_special_tokens":false)"));
  EXPECT_EQ(r.min_tokens, 10);
  EXPECT_EQ(r.stop_token_ids, (std::vector<int32_t>{2, 0, 49151}));
  EXPECT_TRUE(r.include_stop_str_in_output);
  EXPECT_FALSE(r.skip_special_tokens);
  r = MustParse(kCompl, ComplWith(R"("min_tokens":3,"stop_token_ids":[])"));
  EXPECT_EQ(r.min_tokens, 3);  // max_tokens unset: the server checks it against its default
  EXPECT_TRUE(r.stop_token_ids.empty());
  r = MustParse(kCompl, ComplWith(""));
  EXPECT_EQ(r.min_tokens, 0);
  EXPECT_FALSE(r.include_stop_str_in_output);
  EXPECT_TRUE(r.skip_special_tokens);
  // max_completion_tokens counts as max_tokens.
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("max_completion_tokens":4,"min_tokens":4)")).min_tokens,
            4);
}

TEST(OpenAiVllmExtensionsTest, BadValuesAreNamed) {
  struct Case {
    const char* extra;
    const char* param;
    const char* needle;
  };
  const std::string many_ids = [] {
    std::string s = R"("stop_token_ids":[)";
    for (size_t i = 0; i <= kMaxStopTokenIds; ++i) s += (i ? ",1" : "1");
    return s + "]";
  }();
  const Case cases[] = {
      {R"("min_tokens":-1)", "min_tokens", "must be >= 0"},
      {R"("min_tokens":1.5)", "min_tokens", "must be an integer"},
      {R"("min_tokens":"3")", "min_tokens", "must be an integer"},
      {R"("max_tokens":4,"min_tokens":5)", "min_tokens",
       "'min_tokens' (5) must be at most 'max_tokens' (4)"},
      {R"("stop_token_ids":5)", "stop_token_ids", "must be an array"},
      {R"("stop_token_ids":[1,-2])", "stop_token_ids[1]", "must be >= 0"},
      {R"("stop_token_ids":[1,"2"])", "stop_token_ids[1]", "must be an integer"},
      {R"("stop_token_ids":[4294967296])", "stop_token_ids[0]", "must be <= 2147483647"},
      {many_ids.c_str(), "stop_token_ids", "at most 128 ids"},
      {R"("include_stop_str_in_output":1)", "include_stop_str_in_output", "must be a boolean"},
      {R"("skip_special_tokens":"false")", "skip_special_tokens", "must be a boolean"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.extra);
    for (Endpoint ep : {kChat, kCompl}) {
      ApiError e = MustFail(ep, ep == kChat ? ChatWith(c.extra) : ComplWith(c.extra));
      EXPECT_EQ(e.param, c.param);
      EXPECT_NE(e.message.find(c.needle), std::string::npos) << e.message;
    }
  }
}

// The seed is an int64 written as a JSON integer: both ends exact, one past
// either end refused (neither goes through a double).
TEST(OpenAiSeedTest, RangeIsExactAtBothEnds) {
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("seed":-9223372036854775808)")).sampling.seed,
            static_cast<uint64_t>(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("seed":9223372036854775807)")).sampling.seed,
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("seed":-1)")).sampling.seed, ~uint64_t{0});
  for (const char* bad : {R"("seed":-9223372036854775809)", R"("seed":9223372036854775808)",
                          R"("seed":18446744073709551616)", R"("seed":-1e30)", R"("seed":1e19)",
                          R"("seed":-99999999999999999999)"}) {
    SCOPED_TRACE(bad);
    ApiError e = MustFail(kChat, ChatWith(bad));
    EXPECT_EQ(e.code, "invalid_value");
    EXPECT_EQ(e.param, "seed");
  }
}

TEST(OpenAiUnknownFieldsTest, RejectedByDefault) {
  ApiError e = MustFail(kChat, ChatWith(R"("top_a":0.5)"));
  EXPECT_EQ(e.code, "unknown_parameter");
  EXPECT_EQ(e.message, "Unrecognized request argument supplied: top_a");
  EXPECT_EQ(MustFail(kCompl, ComplWith(R"("messages":[])")).param, "messages");
}

TEST(OpenAiUnknownFieldsTest, IgnoredAndListedWhenAsked) {
  const ParseOptions ignore{.ignore_unknown_fields = true};
  const std::string body = R"({"model":"m","top_a":0.5,"messages":[
      {"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"x"}}]},
      {"role":"assistant","content":"a","reasoning_content":"because"},
      {"role":"user","content":"b","reasoning_content":"again"}],
      "stream":true,"stream_options":{"include_usage":true,"chunk_size":4},
      "mirostat":2,"temperature":0})";
  auto v = ParseRequest(kChat, body, ignore);
  ASSERT_TRUE(std::holds_alternative<ApiRequest>(v)) << std::get<ApiError>(v).message;
  const ApiRequest& r = std::get<ApiRequest>(v);
  EXPECT_EQ(r.ignored_fields,
            (std::vector<std::string>{"top_a", "mirostat", "messages.content.cache_control",
                                      "messages.reasoning_content", "stream_options.chunk_size"}));
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.sampling.greedy());
  EXPECT_EQ(r.messages.size(), 3u);
  EXPECT_FALSE(r.messages[1].contains("reasoning_content"));  // not passed to the template
  // The same body is a 400 by default; known fields stay checked when ignoring.
  EXPECT_EQ(MustFail(kChat, body).code, "unknown_parameter");
  auto bad = ParseRequest(kChat, ChatWith(R"("top_a":1,"temperature":"hot")"), ignore);
  ASSERT_TRUE(std::holds_alternative<ApiError>(bad));
  EXPECT_EQ(std::get<ApiError>(bad).param, "temperature");
  // Known-but-unsupported features are not "unknown": still refused.
  bad = ParseRequest(kChat, ChatWith(R"("functions":[{"name":"f"}])"), ignore);
  ASSERT_TRUE(std::holds_alternative<ApiError>(bad));
  EXPECT_EQ(std::get<ApiError>(bad).code, "unsupported");
  // Names are cut like every quoted client string.
  auto longname = ParseRequest(kCompl, ComplWith("\"" + std::string(500, 'k') + "\":1"), ignore);
  ASSERT_TRUE(std::holds_alternative<ApiRequest>(longname));
  ASSERT_EQ(std::get<ApiRequest>(longname).ignored_fields.size(), 1u);
  EXPECT_LE(std::get<ApiRequest>(longname).ignored_fields[0].size(), 67u);
}

TEST(OpenAiUnknownFieldsTest, IgnoredNameDropsIndices) {
  EXPECT_EQ(fields::IgnoredName("messages[12].content[0].x"), "messages.content.x");
  EXPECT_EQ(fields::IgnoredName("top_a"), "top_a");
  EXPECT_EQ(fields::IgnoredName("a[b"), "a[b");
}

}  // namespace
}  // namespace brisk::api
