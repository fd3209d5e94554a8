// Valid requests: what each field becomes in ApiRequest.
#include "server/openai_request.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "server/openai_test_util.h"

namespace brisk::api {
namespace {

using namespace test_util;

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
      "service_tier":"auto","parallel_tool_calls":false,"stream_options":null,
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

TEST(OpenAiApiParseTest, StreamOptionsOnlyWhenStreaming) {
  // OpenAI's answer, word for word.
  for (const char* body :
       {R"("stream_options":{"include_usage":true})",
        R"("stream":false,"stream_options":{"include_usage":false})", R"("stream_options":{})"}) {
    ApiError e = MustFail(kChat, ChatWith(body));
    EXPECT_EQ(e.message,
              "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
    EXPECT_EQ(e.param, "stream_options");
    EXPECT_EQ(MustFail(kCompl, ComplWith(body)).param, "stream_options");
  }
  EXPECT_FALSE(MustParse(kChat, ChatWith(R"("stream_options":null)")).include_usage);
  ApiRequest r =
      MustParse(kChat, ChatWith(R"("stream":true,"stream_options":{"include_usage":true})"));
  EXPECT_TRUE(r.include_usage);
  EXPECT_FALSE(r.continuous_usage);
}

TEST(OpenAiApiParseTest, ContinuousUsageStatsNeedsIncludeUsage) {
  ApiRequest r = MustParse(kCompl, ComplWith(R"("stream":true,
      "stream_options":{"include_usage":true,"continuous_usage_stats":true})"));
  EXPECT_TRUE(r.continuous_usage);
  r = MustParse(kChat,
                ChatWith(R"("stream":true,"stream_options":{"continuous_usage_stats":true})"));
  EXPECT_FALSE(r.continuous_usage);  // as vLLM: only together with include_usage
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("stream":true,
      "stream_options":{"continuous_usage_stats":1})"))
                .param,
            "stream_options.continuous_usage_stats");
}

TEST(OpenAiApiParseTest, SamplingBoundsInclusive) {
  ApiRequest r = MustParse(kChat, ChatWith(R"("temperature":0,"top_p":1,"frequency_penalty":-2,
      "presence_penalty":2,"min_p":1,"repetition_penalty":10)"));
  EXPECT_TRUE(r.sampling.greedy());
  EXPECT_TRUE(r.sampling.Validate().ok());
  EXPECT_FLOAT_EQ(MustParse(kChat, ChatWith(R"("temperature":2)")).sampling.temperature, 2.0f);
}

TEST(OpenAiApiParseTest, ParsePriority) {
  EXPECT_EQ(*ParsePriority("interactive"), Priority::kInteractive);
  EXPECT_EQ(*ParsePriority("Batch"), Priority::kBatch);
  EXPECT_FALSE(ParsePriority("urgent").ok());
  EXPECT_FALSE(ParsePriority("").ok());
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("priority":"urgent")")).param, "priority");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("priority":1)")).code, "invalid_type");
}

}  // namespace
}  // namespace brisk::api
