// Response bodies and SSE events: exact shapes, valid JSON, valid UTF-8.
#include "server/openai_response.h"

#include <gtest/gtest.h>

#include <cctype>
#include <optional>
#include <string>

#include "server/openai_test_util.h"

namespace brisk::api {
namespace {

using namespace test_util;

TEST(OpenAiApiResponseTest, ErrorBody) {
  ApiError e;
  e.message = "'n' must be in [1, 128], got 0";
  e.param = "n";
  e.code = "invalid_value";
  Json j = ParseJson(http::OpenAiErrorBody(e));
  EXPECT_EQ(
      j.dump(),
      R"({"error":{"message":"'n' must be in [1, 128], got 0","type":"invalid_request_error","param":"n","code":"invalid_value"}})");
  ApiError bare;
  bare.http_status = 500;
  bare.type = "server_error";
  bare.message = "boom";
  j = ParseJson(http::OpenAiErrorBody(bare));
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_EQ(j["error"]["type"], "server_error");
}

TEST(OpenAiApiResponseTest, ErrorFromParseRoundTrips) {
  ApiError e = MustFail(kChat, ChatWith(R"("temperature":"hot")"));
  Json j = ParseJson(http::OpenAiErrorBody(e));
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

TEST(OpenAiApiResponseTest, ChunksCarryUsageWhenGiven) {
  const Usage u{.prompt_tokens = 12, .completion_tokens = 3, .cached_tokens = 0};
  for (Endpoint ep : {kChat, kCompl}) {
    Json c = ParseSse(SseChunk(ep, "x", "m", 7, 0, std::nullopt, "a", std::nullopt, &u));
    EXPECT_EQ(c["usage"]["prompt_tokens"], 12);
    EXPECT_EQ(c["usage"]["completion_tokens"], 3);
    EXPECT_EQ(c["usage"]["total_tokens"], 15);
    EXPECT_EQ(c["choices"].size(), 1u);
    EXPECT_FALSE(
        ParseSse(SseChunk(ep, "x", "m", 7, 0, std::nullopt, "a", std::nullopt)).contains("usage"));
  }
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
      http::OpenAiErrorEvent(e),
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
