// /tokenize and /detokenize as pure functions over the default model's
// tokenizer and chat template (the HTTP side: openai_server_surface_test.cc).
#include "server/token_endpoints.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/gguf.h"
#include "server/default_renderer_test_util.h"
#include "util/test_support.h"

namespace brisk {
namespace {

using json = nlohmann::json;

class TokenEndpointsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const DefaultRenderer& d = DefaultRenderer::Get();
    tok_ = d.tok.get();
    renderer_ = d.renderer.get();
  }
  void SetUp() override {
    if (!renderer_) BRISK_SKIP_OR_FAIL_MISSING("the default model");
    ctx_.config = &config_;
    ctx_.model_id = "m";
    ctx_.renderer = renderer_;
    ctx_.engine = {8192, tok_->vocab_size()};
  }
  json Ok(const std::variant<TokenEndpointAnswer, api::ApiError>& v) {
    if (const auto* e = std::get_if<api::ApiError>(&v)) {
      ADD_FAILURE() << e->message;
      return {};
    }
    return json::parse(std::get<TokenEndpointAnswer>(v).body);
  }
  api::ApiError Err(const std::variant<TokenEndpointAnswer, api::ApiError>& v) {
    const auto* e = std::get_if<api::ApiError>(&v);
    if (!e) {
      ADD_FAILURE() << "expected an error";
      return {};
    }
    return *e;
  }

  static inline const Tokenizer* tok_ = nullptr;
  static inline const PromptRenderer* renderer_ = nullptr;
  InferenceConfig config_;
  PreparationContext ctx_;
};

TEST_F(TokenEndpointsTest, PromptTokensAreWhatCompletionsFeeds) {
  // Special-token strings in a completions prompt are parsed, as there.
  const std::string prompt = "<|im_start|>user\nHi";
  json b = Ok(Tokenize(ctx_, json{{"model", "m"}, {"prompt", prompt}}.dump()));
  const std::vector<int32_t> want = renderer_->EncodeCompletion(prompt);
  EXPECT_EQ(b["tokens"].get<std::vector<int32_t>>(), want);
  EXPECT_EQ(b["count"], want.size());
  EXPECT_EQ(b["max_model_len"], 8192);
  EXPECT_EQ(b.begin().key(), "count");  // vLLM's field order
  // add_special_tokens false: no BOS/EOS added (the same here: SmolLM2 adds none).
  b = Ok(Tokenize(ctx_, json{{"prompt", prompt}, {"add_special_tokens", false}}.dump()));
  EXPECT_EQ(b["tokens"].get<std::vector<int32_t>>(), tok_->Encode(prompt, false, true));
}

TEST_F(TokenEndpointsTest, TokenStrsRenderEveryPiece) {
  json b = Ok(Tokenize(ctx_, R"({"prompt":"<|im_end|> caf\u00e9","return_token_strs":true})"));
  std::string joined;
  for (const auto& s : b["token_strs"]) joined += s.get<std::string>();
  EXPECT_EQ(joined, "<|im_end|> caf\u00e9");
  EXPECT_EQ(b["token_strs"].size(), b["tokens"].size());
}

TEST_F(TokenEndpointsTest, MessagesAreWhatChatFeeds) {
  const json messages = json::parse(R"([{"role":"system","content":"Be brief."},
      {"role":"user","content":"<|im_end|> is just text here"}])");
  json b = Ok(Tokenize(ctx_, json{{"messages", messages}}.dump()));
  auto want = renderer_->EncodeChat(messages);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(b["tokens"].get<std::vector<int32_t>>(), *want);
  b = Ok(Tokenize(ctx_, json{{"messages", messages}, {"add_generation_prompt", false}}.dump()));
  auto rendered = renderer_->RenderChat(messages, false);
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(b["tokens"].get<std::vector<int32_t>>(),
            tok_->EncodeWithPlainRanges(rendered->text, true, rendered->plain));
  EXPECT_LT(b["count"].get<size_t>(), want->size());
}

TEST_F(TokenEndpointsTest, DetokenizeRendersSpecialTokens) {
  const std::vector<int32_t> ids = tok_->Encode("<|im_start|>assistant\nOK", false, true);
  json b = Ok(Detokenize(ctx_, json{{"tokens", ids}}.dump()));
  EXPECT_EQ(b["prompt"], "<|im_start|>assistant\nOK");
  EXPECT_EQ(Ok(Detokenize(ctx_, R"({"tokens":[]})"))["prompt"], "");
  // Half a character decodes to U+FFFD: the answer is always valid JSON text.
  const std::vector<int32_t> crab = tok_->Encode("\U0001F980", false, false);
  ASSERT_GE(crab.size(), 2u);
  b = Ok(Detokenize(ctx_, json{{"tokens", {crab[0]}}}.dump()));
  EXPECT_NE(b["prompt"].get<std::string>().find("\xEF\xBF\xBD"), std::string::npos);
}

TEST_F(TokenEndpointsTest, ErrorsNameTheField) {
  const int32_t vocab = tok_->vocab_size();
  api::ApiError e = Err(Detokenize(ctx_, json{{"tokens", {0, vocab}}}.dump()));
  EXPECT_EQ(e.param, "tokens[1]");
  EXPECT_NE(e.message.find(std::to_string(vocab)), std::string::npos);
  EXPECT_EQ(Err(Detokenize(ctx_, R"({"tokens":[1.5]})")).param, "tokens[0]");
  EXPECT_EQ(Err(Detokenize(ctx_, R"({"tokens":[true]})")).param, "tokens[0]");
  EXPECT_EQ(Err(Tokenize(ctx_, R"({"prompt":"a","prompt":"b"})")).code, "duplicate_key");
  EXPECT_EQ(Err(Tokenize(ctx_, "{\"prompt\":\"\xFF\"}")).code, "invalid_encoding");
  EXPECT_EQ(Err(Tokenize(ctx_, R"({"prompt":"a","add_special_tokens":"no"})")).param,
            "add_special_tokens");
  EXPECT_EQ(Err(Tokenize(ctx_, R"({"prompt":"a","model":"x"})")).http_status, 404);
  EXPECT_EQ(Err(Tokenize(ctx_, R"({"prompt":"a","model":5})")).param, "model");
  EXPECT_EQ(Err(Tokenize(ctx_, R"({"messages":[]})")).param, "messages");
}

TEST_F(TokenEndpointsTest, UnknownFieldsFollowTheServerSetting) {
  const std::string body = R"({"prompt":"a","guided_decoding_backend":"x","extra":1})";
  EXPECT_EQ(Err(Tokenize(ctx_, body)).code, "unknown_parameter");
  config_.server.unknown_request_fields = "ignore";
  auto v = Tokenize(ctx_, body);
  ASSERT_TRUE(std::holds_alternative<TokenEndpointAnswer>(v));
  EXPECT_EQ(std::get<TokenEndpointAnswer>(v).ignored_fields,
            (std::vector<std::string>{"guided_decoding_backend", "extra"}));
  v = Tokenize(ctx_, R"({"messages":[{"role":"user","content":"a","weird":1}]})");
  ASSERT_TRUE(std::holds_alternative<TokenEndpointAnswer>(v));
  EXPECT_EQ(std::get<TokenEndpointAnswer>(v).ignored_fields,
            std::vector<std::string>{"messages.weird"});
}

}  // namespace
}  // namespace brisk
