// The OpenAI front door over a second implementation of the engine-client
// seam: a scripted engine (openai_server_test_fixture.h). If the server
// needed anything from the real engine beyond engine/engine_client.h, this
// would not compile or these answers would be wrong.
#include "server/openai_server.h"

#include <gtest/gtest.h>

#include "server/openai_server_test_fixture.h"

namespace brisk {
namespace {

using namespace openai_server_test;

TEST_F(OpenAiServerTest, ChatCompletionFromScriptedEngine) {
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", kChat);
  ASSERT_EQ(r.status, 200) << r.body;
  json b = json::parse(r.body);
  EXPECT_EQ(b["object"], "chat.completion");
  EXPECT_EQ(b["model"], "scripted-model");
  EXPECT_EQ(b["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "stop");
  auto subs = engine_.submitted();
  ASSERT_EQ(subs.size(), 1u);
  // The engine got exactly what the prompt renderer makes of the messages.
  auto expected = renderer_->EncodeChat(json::parse(kChat)["messages"]);
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(subs[0].request.prompt, *expected);
  EXPECT_EQ(b["usage"]["prompt_tokens"], expected->size());
  EXPECT_EQ(b["usage"]["completion_tokens"], 2);
  EXPECT_EQ(b["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
  EXPECT_TRUE(subs[0].request.deadline.has_value());
}

TEST_F(OpenAiServerTest, StreamedChatHasOpenAiShape) {
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions",
                 R"({"model":"scripted-model","messages":[{"role":"user","content":"Hi"}],)"
                 R"("stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "text/event-stream");
  auto ev = SseEvents(r.body);
  ASSERT_GE(ev.size(), 4u) << r.body;
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  bool saw_finish = false, saw_usage = false;
  for (const auto& e : ev) {
    if (e.is_string()) continue;
    if (!e["choices"].empty()) {
      const auto& c = e["choices"][0];
      if (c["delta"].contains("content")) text += c["delta"]["content"].get<std::string>();
      if (!c["finish_reason"].is_null()) saw_finish = true;
    } else if (e.contains("usage")) {
      saw_usage = true;
      EXPECT_EQ(e["usage"]["completion_tokens"], 2);
    }
  }
  EXPECT_EQ(text, "Hello");
  EXPECT_TRUE(saw_finish);
  EXPECT_TRUE(saw_usage);
  EXPECT_EQ(ev.back(), json("[DONE]"));
}

TEST_F(OpenAiServerTest, CompletionsWithTwoPromptsAndN) {
  engine_.reason = FinishReason::kLength;
  StartServer();
  Reply r = Call("POST", "/v1/completions",
                 R"({"model":"scripted-model","prompt":["a","b"],"n":2,"max_tokens":2})");
  ASSERT_EQ(r.status, 200) << r.body;
  json b = json::parse(r.body);
  ASSERT_EQ(b["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(b["choices"][i]["index"], i);
    EXPECT_EQ(b["choices"][i]["text"], "Hello");
    EXPECT_EQ(b["choices"][i]["finish_reason"], "length");
  }
  auto subs = engine_.submitted();
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[0].request.n, 2);
  EXPECT_EQ(subs[0].request.max_tokens, 2);
  EXPECT_EQ(b["usage"]["completion_tokens"], 8);
}

TEST_F(OpenAiServerTest, FullEngineQueueIs429WithRetryAfter) {
  engine_.queue_full = true;
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", kChat);
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(r.retry_after, "7");
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "queue_full");
}

TEST_F(OpenAiServerTest, ClientGoneCancelsTheEngineRequest) {
  engine_.hold = true;
  StartServer();
  {
    net::io_context ioc;
    net::ip::tcp::socket sock(ioc);
    sock.connect({net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(server_->port())});
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/chat/completions", 11};
    req.set(bhttp::field::host, "127.0.0.1");
    req.set(bhttp::field::content_type, "application/json");
    req.body() = kChat;
    req.prepare_payload();
    bhttp::write(sock, req);
    ASSERT_TRUE(engine_.WaitForSubmits(1));
  }  // the client closes
  for (int i = 0; i < 500 && (engine_.cancelled().empty() || server_->active_requests() > 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(engine_.cancelled().size(), 1u);
  EXPECT_EQ(engine_.cancelled()[0], engine_.submitted()[0].id);
  EXPECT_EQ(server_->active_requests(), 0);
}

TEST_F(OpenAiServerTest, MetricsShowTheEnginesLoad) {
  engine_.load.scheduler.running[0] = 3;
  engine_.load.queued[1] = 5;
  StartServer();
  ASSERT_EQ(Call("POST", "/v1/chat/completions", kChat).status, 200);
  Reply m = Call("GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("brisk:num_requests_running{priority=\"interactive\"} 3"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("brisk:num_requests_waiting{priority=\"batch\"} 5"), std::string::npos);
  EXPECT_NE(m.body.find("brisk:requests_total{outcome=\"ok\"} 1"), std::string::npos);
}

TEST_F(OpenAiServerTest, KeysAreCheckedBeforeTheBodyAndMayGuardMetrics) {
  config_.keys = {{"sk-1", "acme", "search", "acme"}};
  config_.server.metrics_require_key = true;
  StartServer();
  EXPECT_EQ(Call("POST", "/v1/chat/completions", kChat).status, 401);
  EXPECT_EQ(Call("POST", "/v1/chat/completions", kChat, "sk-1").status, 200);
  EXPECT_EQ(Call("GET", "/metrics").status, 401);
  EXPECT_EQ(Call("GET", "/metrics", "", "sk-1").status, 200);
  EXPECT_EQ(Call("GET", "/health").status, 200);  // probes need no key
  EXPECT_EQ(engine_.submitted().size(), 1u);
}

TEST_F(OpenAiServerTest, BadBodyNeverReachesTheEngine) {
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", R"({"model":"scripted-model","messages":7})");
  EXPECT_EQ(r.status, 400) << r.body;
  r = Call("POST", "/v1/chat/completions",
           R"({"model":"other","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_TRUE(engine_.submitted().empty());
  EXPECT_EQ(Call("GET", "/health").status, 200);
  EXPECT_EQ(Call("POST", "/health", "{}").status, 405);
}

}  // namespace
}  // namespace brisk
