// The OpenAI surface beyond the basics, through the real front door and the
// scripted engine (openai_server_test_fixture.h): OpenAI's streaming shape,
// vLLM's extensions and continuous usage, unknown fields in both modes,
// logit_bias, and /tokenize, /detokenize.
#include <gtest/gtest.h>

#include "server/openai_server.h"
#include "server/openai_server_test_fixture.h"

namespace brisk {
namespace {

using namespace openai_server_test;

const std::string kChatStart =
    R"({"model":"scripted-model","messages":[{"role":"user","content":"Hi"}])";

std::string ChatWith(const std::string& extra) { return kChatStart + "," + extra + "}"; }

TEST_F(OpenAiServerTest, StreamedChatChunksAreShapedAsOpenAiSendsThem) {
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", ChatWith(R"("stream":true)"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto ev = SseEvents(r.body);
  ASSERT_EQ(ev.size(), 5u) << r.body;  // role, "Hel", "lo", finish, [DONE]
  EXPECT_EQ(ev[0]["choices"][0]["delta"], json::parse(R"({"role":"assistant","content":""})"));
  EXPECT_TRUE(ev[0]["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(ev[1]["choices"][0]["delta"], json::parse(R"({"content":"Hel"})"));
  EXPECT_EQ(ev[2]["choices"][0]["delta"], json::parse(R"({"content":"lo"})"));
  EXPECT_EQ(ev[3]["choices"][0]["delta"], json::object());
  EXPECT_EQ(ev[3]["choices"][0]["finish_reason"], "stop");
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(ev[i].contains("usage")) << i;
  EXPECT_EQ(ev[4], json("[DONE]"));
}

TEST_F(OpenAiServerTest, StreamedCompletionEndsWithFinishReason) {
  engine_.reason = FinishReason::kLength;
  StartServer();
  Reply r =
      Call("POST", "/v1/completions", R"({"model":"scripted-model","prompt":"a","stream":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto ev = SseEvents(r.body);
  ASSERT_EQ(ev.size(), 4u) << r.body;  // "Hel", "lo", finish, [DONE]
  EXPECT_EQ(ev[0]["choices"][0]["text"], "Hel");
  EXPECT_EQ(ev[2]["choices"][0]["text"], "");
  EXPECT_EQ(ev[2]["choices"][0]["finish_reason"], "length");
}

TEST_F(OpenAiServerTest, StreamOptionsWithoutStreamIs400) {
  StartServer();
  Reply r =
      Call("POST", "/v1/chat/completions", ChatWith(R"("stream_options":{"include_usage":true})"));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["message"],
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
  EXPECT_TRUE(engine_.submitted().empty());
}

TEST_F(OpenAiServerTest, ContinuousUsageStatsPutUsageOnEveryChunk) {
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions",
                 ChatWith(R"("stream":true,"n":2,"stream_options":{"include_usage":true,)"
                          R"("continuous_usage_stats":true})"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto subs = engine_.submitted();
  ASSERT_EQ(subs.size(), 1u);
  const auto prompt_tokens = static_cast<int64_t>(subs[0].request.prompt.size());
  auto ev = SseEvents(r.body);
  ASSERT_GE(ev.size(), 3u);
  int64_t last = 0;
  for (size_t i = 0; i + 1 < ev.size(); ++i) {
    ASSERT_TRUE(ev[i].contains("usage")) << ev[i].dump();
    EXPECT_EQ(ev[i]["usage"]["prompt_tokens"], prompt_tokens);
    const int64_t done = ev[i]["usage"]["completion_tokens"];
    EXPECT_GE(done, last);
    last = done;
    EXPECT_EQ(ev[i]["usage"]["total_tokens"], prompt_tokens + done);
  }
  EXPECT_EQ(last, 4);                                 // 2 samples x 2 tokens
  EXPECT_TRUE(ev[ev.size() - 2]["choices"].empty());  // the include_usage chunk
}

TEST_F(OpenAiServerTest, ExtensionsReachTheEngine) {
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions",
                 ChatWith(R"("max_tokens":8,"min_tokens":3,"stop_token_ids":[2,7],)"
                          R"("include_stop_str_in_output":true,"skip_special_tokens":false,)"
                          R"("logit_bias":{"100":-100,"5":2.5},"seed":-9223372036854775808)"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto subs = engine_.submitted();
  ASSERT_EQ(subs.size(), 1u);
  const GenerationRequest& g = subs[0].request;
  EXPECT_EQ(g.max_tokens, 8);
  EXPECT_EQ(g.min_tokens, 3);
  EXPECT_EQ(g.stop_token_ids, (std::vector<int32_t>{2, 7}));
  EXPECT_TRUE(g.include_stop_str_in_output);
  EXPECT_FALSE(g.skip_special_tokens);
  EXPECT_EQ(g.sampling.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{5, 2.5f}, {100, -100.0f}}));
  EXPECT_EQ(g.sampling.seed, uint64_t{1} << 63);
}

TEST_F(OpenAiServerTest, MinTokensRaisesTheDefaultMaxTokens) {
  config_.limits.default_max_tokens = 4;
  StartServer();
  ASSERT_EQ(Call("POST", "/v1/chat/completions", ChatWith(R"("min_tokens":10)")).status, 200);
  EXPECT_EQ(engine_.submitted()[0].request.max_tokens, 10);
  Reply r = Call("POST", "/v1/chat/completions", ChatWith(R"("min_tokens":5000)"));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "min_tokens");
}

TEST_F(OpenAiServerTest, TokenIdsOutsideTheVocabularyAre400) {
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", ChatWith(R"("logit_bias":{"49152":1})"));
  ASSERT_EQ(r.status, 400) << r.body;
  json e = json::parse(r.body)["error"];
  EXPECT_EQ(e["param"], "logit_bias");
  const std::string msg = e["message"];
  EXPECT_NE(msg.find("49152"), std::string::npos) << msg;
  EXPECT_NE(msg.find("vocabulary size 49152"), std::string::npos) << msg;
  r = Call("POST", "/v1/completions",
           R"({"model":"scripted-model","prompt":"a","stop_token_ids":[1,99999]})");
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("99999"), std::string::npos);
  EXPECT_EQ(Call("POST", "/v1/chat/completions", ChatWith(R"("logit_bias":{"49151":1})")).status,
            200);
  EXPECT_EQ(engine_.submitted().size(), 1u);
}

TEST_F(OpenAiServerTest, UnknownFieldsAreRejectedByDefault) {
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", ChatWith(R"("top_a":1)"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "unknown_parameter");
  EXPECT_EQ(r.headers.count("x-brisk-ignored-fields"), 0u);
  EXPECT_TRUE(engine_.submitted().empty());
}

TEST_F(OpenAiServerTest, IgnoredUnknownFieldsAreListedAndCounted) {
  config_.server.unknown_request_fields = "ignore";
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions",
                 R"({"model":"scripted-model","top_a":1,"mirostat":2,"messages":[)"
                 R"({"role":"user","content":"Hi","reasoning_content":"x"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["x-brisk-ignored-fields"], "top_a,mirostat,messages.reasoning_content");
  r = Call("POST", "/v1/completions",
           R"({"model":"scripted-model","prompt":"a","stream":true,"top_a":1})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["x-brisk-ignored-fields"], "top_a");
  // Nothing ignored: no header.
  r = Call("POST", "/v1/completions", R"({"model":"scripted-model","prompt":"a"})");
  EXPECT_EQ(r.headers.count("x-brisk-ignored-fields"), 0u);
  Reply m = Call("GET", "/metrics");
  EXPECT_NE(m.body.find("brisk:ignored_request_fields_total{field=\"top_a\"} 2"), std::string::npos)
      << m.body;
  EXPECT_NE(
      m.body.find("brisk:ignored_request_fields_total{field=\"messages.reasoning_content\"} 1"),
      std::string::npos);
}

TEST_F(OpenAiServerTest, TokenizeAndDetokenize) {
  StartServer();
  Reply r = Call("POST", "/tokenize", R"({"model":"scripted-model","prompt":"Hello world"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  json b = json::parse(r.body);
  const std::vector<int32_t> want = renderer_->EncodeCompletion("Hello world");
  EXPECT_EQ(b["tokens"].get<std::vector<int32_t>>(), want);
  EXPECT_EQ(b["count"], want.size());
  EXPECT_EQ(b["max_model_len"], 2048);
  EXPECT_TRUE(b["token_strs"].is_null());

  // Messages: exactly the prompt /v1/chat/completions feeds the engine.
  r = Call("POST", "/tokenize", R"({"messages":[{"role":"user","content":"Hi there"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto chat = renderer_->EncodeChat(json::parse(kChat)["messages"]);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(json::parse(r.body)["tokens"].get<std::vector<int32_t>>(), *chat);
  ASSERT_EQ(Call("POST", "/v1/chat/completions", kChat).status, 200);
  EXPECT_EQ(engine_.submitted()[0].request.prompt, *chat);
  // Without the generation prompt: fewer tokens, same start.
  r = Call("POST", "/tokenize",
           R"({"messages":[{"role":"user","content":"Hi there"}],"add_generation_prompt":false,)"
           R"("return_token_strs":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  b = json::parse(r.body);
  const auto no_gen = b["tokens"].get<std::vector<int32_t>>();
  ASSERT_LT(no_gen.size(), chat->size());
  EXPECT_TRUE(std::equal(no_gen.begin(), no_gen.end(), chat->begin()));
  ASSERT_EQ(b["token_strs"].size(), no_gen.size());
  EXPECT_EQ(b["token_strs"][0], "<|im_start|>");

  r = Call("POST", "/detokenize", json{{"model", "scripted-model"}, {"tokens", want}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["prompt"], "Hello world");
  r = Call("POST", "/detokenize", json{{"tokens", *chat}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = json::parse(r.body)["prompt"];  // special tokens rendered
  EXPECT_EQ(text.rfind("<|im_start|>", 0), 0u) << text;
  EXPECT_NE(text.find("<|im_start|>user\nHi there<|im_end|>"), std::string::npos) << text;
  EXPECT_TRUE(engine_.submitted().size() == 1u);  // token endpoints never reach the engine
}

TEST_F(OpenAiServerTest, TokenEndpointErrors) {
  StartServer();
  struct Case {
    const char* path;
    const char* body;
    int status;
    const char* param;
  };
  const Case cases[] = {
      {"/tokenize", R"({"prompt":"a","messages":[{"role":"user","content":"b"}]})", 400,
       "messages"},
      {"/tokenize", R"({})", 400, "prompt"},
      {"/tokenize", R"({"prompt":7})", 400, "prompt"},
      {"/tokenize", R"({"prompt":"a","add_generation_prompt":true})", 400, "add_generation_prompt"},
      {"/tokenize", R"({"messages":[{"role":"robot","content":"b"}]})", 400, "messages[0].role"},
      {"/tokenize", R"({"prompt":"a","colour":1})", 400, "colour"},
      {"/tokenize", R"({"model":"other","prompt":"a"})", 404, "model"},
      {"/tokenize", R"([1])", 400, ""},
      {"/detokenize", R"({"tokens":[1,49152]})", 400, "tokens[1]"},
      {"/detokenize", R"({"tokens":[-1]})", 400, "tokens[0]"},
      {"/detokenize", R"({"tokens":"abc"})", 400, "tokens"},
      {"/detokenize", R"({})", 400, "tokens"},
      {"/detokenize", R"({"tokens":[1],"y":2})", 400, "y"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    Reply r = Call("POST", c.path, c.body);
    EXPECT_EQ(r.status, c.status) << r.body;
    json e = json::parse(r.body)["error"];
    EXPECT_EQ(e["param"].is_null() ? "" : e["param"].get<std::string>(), c.param);
  }
  Reply r = Call("POST", "/detokenize", R"({"tokens":[49152]})");
  EXPECT_NE(r.body.find("vocabulary size 49152"), std::string::npos) << r.body;
  EXPECT_EQ(Call("GET", "/tokenize").status, 405);
}

TEST_F(OpenAiServerTest, TokenEndpointsNeedTheKeyAndHonourIgnoreMode) {
  config_.keys = {{"sk-1", "acme", "", "acme"}};
  config_.server.unknown_request_fields = "ignore";
  StartServer();
  EXPECT_EQ(Call("POST", "/tokenize", R"({"prompt":"a"})").status, 401);
  EXPECT_EQ(Call("POST", "/detokenize", R"({"tokens":[1]})", "sk-wrong").status, 401);
  Reply r = Call("POST", "/tokenize", R"({"prompt":"a","colour":1})", "sk-1");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["x-brisk-ignored-fields"], "colour");
  EXPECT_EQ(Call("POST", "/detokenize", R"({"tokens":[1]})", "sk-1").status, 200);
}

}  // namespace
}  // namespace brisk
