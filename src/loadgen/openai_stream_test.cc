#include "loadgen/openai_stream.h"

#include <gtest/gtest.h>

#include "loadgen/client.h"

namespace brisk::loadgen {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

struct Feeder {
  OpenAiStream stream;
  Clock::time_point t0;
  Feeder(ApiKind api, Clock::time_point sent) : stream(api, sent), t0(sent) {}
  void Data(int at_ms, std::string data) {
    stream.OnEvent({"", std::move(data)}, t0 + milliseconds(at_ms));
  }
};

TEST(OpenAiStream, CompletionsTimingsAndUsage) {
  Feeder f(ApiKind::kCompletions, Clock::now());
  f.Data(100, R"({"choices":[{"index":0,"text":"Hel"}]})");
  f.Data(130, R"({"choices":[{"index":0,"text":"lo"}]})");
  f.Data(150, R"({"choices":[{"index":0,"text":""}]})");  // no content: no ITL entry
  f.Data(190, R"({"choices":[{"index":0,"text":"!","finish_reason":null}]})");
  f.Data(200, R"({"choices":[{"index":0,"text":"","finish_reason":"length"}]})");
  f.Data(210,
         R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}})");
  EXPECT_FALSE(f.stream.finished());
  f.Data(220, "[DONE]");
  EXPECT_TRUE(f.stream.finished());
  RequestRecord r;
  f.stream.Complete(/*prompt_tokens_estimate=*/10, &r);
  EXPECT_EQ(r.status, RequestStatus::kOk);
  EXPECT_NEAR(r.ttft_s, 0.100, 1e-9);
  EXPECT_NEAR(r.e2e_s, 0.200, 1e-9);  // last chunk with choices, as vLLM
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.030, 1e-9);
  EXPECT_NEAR(r.itl_s[1], 0.060, 1e-9);
  EXPECT_EQ(r.content_chunks, 3);
  EXPECT_EQ(r.output_tokens, 4);  // usage wins over the chunk count
  EXPECT_TRUE(r.output_tokens_from_usage);
  EXPECT_EQ(r.prompt_tokens, 12);
  EXPECT_TRUE(r.prompt_tokens_from_usage);
  EXPECT_EQ(r.finish_reason, "length");
}

TEST(OpenAiStream, ChatRoleOnlyDeltaIsNotTheFirstToken) {
  Feeder f(ApiKind::kChat, Clock::now());
  f.Data(20, R"({"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]})");
  f.Data(50, R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})");
  f.Data(80, R"({"choices":[{"index":0,"delta":{"content":" there"}}]})");
  f.Data(90, R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})");
  f.Data(95, "[DONE]");
  RequestRecord r;
  f.stream.Complete(7, &r);
  EXPECT_EQ(r.status, RequestStatus::kOk);
  EXPECT_NEAR(r.ttft_s, 0.050, 1e-9);
  EXPECT_NEAR(r.e2e_s, 0.090, 1e-9);
  // No usage: output = content chunks, prompt = the workload's estimate.
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_FALSE(r.output_tokens_from_usage);
  EXPECT_EQ(r.prompt_tokens, 7);
  EXPECT_FALSE(r.prompt_tokens_from_usage);
}

TEST(OpenAiStream, ErrorsAreErrors) {
  {
    Feeder f(ApiKind::kCompletions, Clock::now());
    f.Data(10, R"({"choices":[{"text":"a"}]})");
    f.Data(20, R"({"error":{"message":"context full","code":400}})");
    EXPECT_TRUE(f.stream.finished());
    RequestRecord r;
    f.stream.Complete(1, &r);
    EXPECT_EQ(r.status, RequestStatus::kError);
    EXPECT_NE(r.error.find("context full"), std::string::npos);
  }
  {
    Feeder f(ApiKind::kCompletions, Clock::now());
    f.stream.OnEvent({"error", R"({"code":500,"message":"slot died"})"}, f.t0);
    RequestRecord r;
    f.stream.Complete(1, &r);
    EXPECT_EQ(r.status, RequestStatus::kError);
    EXPECT_NE(r.error.find("slot died"), std::string::npos);
  }
  {
    Feeder f(ApiKind::kCompletions, Clock::now());
    f.Data(10, "{not json");
    RequestRecord r;
    f.stream.Complete(1, &r);
    EXPECT_EQ(r.status, RequestStatus::kError);
  }
  {
    Feeder f(ApiKind::kCompletions, Clock::now());
    f.Data(10, R"({"choices":[{"text":""}]})");
    f.Data(20, "[DONE]");
    RequestRecord r;
    f.stream.Complete(1, &r);
    EXPECT_EQ(r.status, RequestStatus::kError);  // never a content chunk
  }
  {
    // Odd shapes never throw: choices not an array, text a number, usage a string.
    Feeder f(ApiKind::kCompletions, Clock::now());
    f.Data(10, R"({"choices":{"text":"x"}})");
    f.Data(11, R"({"choices":[{"text":5}],"usage":"many"})");
    f.Data(12, R"([1,2,3])");
    f.Data(13, R"({"choices":[null]})");
    f.Data(14, R"({"choices":[{"text":"ok"}],"usage":{"completion_tokens":"3"}})");
    RequestRecord r;
    f.stream.Complete(1, &r);
    EXPECT_EQ(r.status, RequestStatus::kOk);
    EXPECT_EQ(r.output_tokens, 1);
  }
}

TEST(BuildRequestBody, CompletionsAndChat) {
  WorkloadItem item;
  item.prompt = "Hello there";
  item.messages = {{"system", "Be brief."}, {"user", "Hello there"}};
  item.max_tokens = 16;
  RequestOptions o;
  o.model = "m";
  json b = json::parse(BuildRequestBody(item, o));
  EXPECT_EQ(b["model"], "m");
  EXPECT_EQ(b["prompt"], "Hello there");
  EXPECT_EQ(b["max_tokens"], 16);
  EXPECT_EQ(b["temperature"], 0.0);
  EXPECT_EQ(b["stream"], true);
  EXPECT_EQ(b["stream_options"]["include_usage"], true);
  EXPECT_FALSE(b.contains("ignore_eos"));
  EXPECT_FALSE(b.contains("messages"));

  o.api = ApiKind::kChat;
  o.ignore_eos = true;
  o.extra_body = {{"cache_prompt", false}, {"temperature", 0.7}};
  b = json::parse(BuildRequestBody(item, o));
  EXPECT_FALSE(b.contains("prompt"));
  ASSERT_EQ(b["messages"].size(), 2u);
  EXPECT_EQ(b["messages"][0]["role"], "system");
  EXPECT_EQ(b["messages"][1]["content"], "Hello there");
  EXPECT_EQ(b["ignore_eos"], true);
  EXPECT_EQ(b["cache_prompt"], false);
  EXPECT_EQ(b["temperature"], 0.7);  // extra body wins

  item.prompt = "bad \xff\xfe utf8";  // replaced, not thrown on
  o.api = ApiKind::kCompletions;
  EXPECT_NO_THROW(json::parse(BuildRequestBody(item, o)));
}

TEST(ParseFirstModelId, OpenAiListAndJunk) {
  auto id = ParseFirstModelId(R"({"object":"list","data":[{"id":"smollm2","object":"model"}]})");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "smollm2");
  EXPECT_FALSE(ParseFirstModelId(R"({"data":[]})").ok());
  EXPECT_FALSE(ParseFirstModelId("<html>").ok());
}

}  // namespace
}  // namespace brisk::loadgen
