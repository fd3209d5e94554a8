// logprobs / top_logprobs / echo / suffix parsing, and the records' JSON in
// OpenAI's chat and legacy completions shapes.
#include "server/openai_logprobs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "model/gguf.h"
#include "server/openai_response.h"
#include "server/openai_test_util.h"
#include "util/test_support.h"

namespace brisk::api {
namespace {

using namespace test_util;

TEST(OpenAiLogprobsParse, ChatLogprobsAndTopLogprobs) {
  EXPECT_EQ(MustParse(kChat, ChatWith("")).logprobs, -1);
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("logprobs":false,"top_logprobs":0)")).logprobs, -1);
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("logprobs":true)")).logprobs, 0);
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("logprobs":true,"top_logprobs":20)")).logprobs, 20);
  ApiError e = MustFail(kChat, ChatWith(R"("top_logprobs":3)"));
  EXPECT_EQ(e.param, "top_logprobs");
  EXPECT_NE(e.message.find("'logprobs'"), std::string::npos) << e.message;
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("logprobs":false,"top_logprobs":2)")).param,
            "top_logprobs");
  e = MustFail(kChat, ChatWith(R"("logprobs":true,"top_logprobs":21)"));
  EXPECT_EQ(e.code, "invalid_value");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("logprobs":true,"top_logprobs":-1)")).code,
            "invalid_value");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("logprobs":1)")).code, "invalid_type");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("echo":true)")).code, "unknown_parameter");
}

TEST(OpenAiLogprobsParse, CompletionsLogprobsEchoSuffix) {
  EXPECT_EQ(MustParse(kCompl, ComplWith(R"("logprobs":0)")).logprobs, 0);
  EXPECT_EQ(MustParse(kCompl, ComplWith(R"("logprobs":5)")).logprobs, 5);
  EXPECT_EQ(MustParse(kCompl, ComplWith(R"("logprobs":null)")).logprobs, -1);
  EXPECT_EQ(MustFail(kCompl, ComplWith(R"("logprobs":6)")).code, "invalid_value");
  EXPECT_EQ(MustFail(kCompl, ComplWith(R"("logprobs":true)")).code, "invalid_type");
  EXPECT_TRUE(MustParse(kCompl, ComplWith(R"("echo":true)")).echo);
  EXPECT_FALSE(MustParse(kCompl, ComplWith(R"("echo":false,"suffix":"")")).echo);
  ApiError e = MustFail(kCompl, ComplWith(R"("suffix":"end")"));
  EXPECT_EQ(e.code, "unsupported");
  EXPECT_NE(e.message.find("infill"), std::string::npos) << e.message;
}

class OpenAiLogprobsJson : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
    if (!std::filesystem::exists(path)) return;
    auto g = GgufFile::Open(path);
    if (!g.ok()) return;
    gguf_ = std::move(*g).release();
    auto t = Tokenizer::FromGguf(*gguf_);
    if (t.ok()) tok_ = std::move(*t).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete gguf_;
  }
  void SetUp() override {
    if (!tok_) BRISK_SKIP_OR_FAIL_MISSING("the default model");
  }
  static int32_t Id(const std::string& text) { return tok_->Encode(text, false, false).at(0); }
  static inline GgufFile* gguf_ = nullptr;
  static inline Tokenizer* tok_ = nullptr;
};

TEST_F(OpenAiLogprobsJson, ChatShape) {
  const int32_t hi = Id("Hi"), yo = Id(" the");
  std::vector<TokenLogprob> recs = {{hi, -0.5f, {{hi, -0.5f}, {yo, -1.5f}}},
                                    {yo, -std::numeric_limits<float>::infinity(), {}}};
  Json j = ChatLogprobs(ChatLogprobContent(recs, *tok_, false));
  ASSERT_EQ(j["content"].size(), 2u);
  EXPECT_TRUE(j["refusal"].is_null());
  const Json& c0 = j["content"][0];
  EXPECT_EQ(c0["token"], "Hi");
  EXPECT_DOUBLE_EQ(c0["logprob"].get<double>(), -0.5);
  EXPECT_EQ(c0["bytes"], Json::array({'H', 'i'}));
  ASSERT_EQ(c0["top_logprobs"].size(), 2u);
  EXPECT_EQ(c0["top_logprobs"][1]["token"], " the");
  EXPECT_EQ(c0["top_logprobs"][1]["bytes"].size(), 4u);
  EXPECT_DOUBLE_EQ(j["content"][1]["logprob"].get<double>(), -9999.0);  // -inf
  EXPECT_TRUE(j["content"][1]["top_logprobs"].empty());
  // In a body: the choice's "logprobs".
  Choice ch;
  ch.text = "Hi the";
  ch.finish_reason = "stop";
  ch.logprobs = j;
  Json body = ParseJson(CompletionBody(kChat, "id", "m", 1, {ch}, {}));
  EXPECT_EQ(body["choices"][0]["logprobs"]["content"][1]["token"], " the");
}

TEST_F(OpenAiLogprobsJson, LegacyCompletionsShapeWithEcho) {
  const int32_t once = Id("Once"), upon = Id(" upon"), a = Id(" a");
  std::vector<TokenLogprob> prompt = {{once, 0, {}}, {upon, -2.0f, {{a, -1.0f}}}};
  std::vector<TokenLogprob> gen = {{a, -0.25f, {{a, -0.25f}}}};
  Json j;
  int64_t offset = 0;
  AppendCompletionLogprobs(prompt, *tok_, false, true, &offset, &j);
  AppendCompletionLogprobs(gen, *tok_, false, false, &offset, &j);
  EXPECT_EQ(j["tokens"], Json::array({"Once", " upon", " a"}));
  EXPECT_TRUE(j["token_logprobs"][0].is_null());
  EXPECT_DOUBLE_EQ(j["token_logprobs"][1].get<double>(), -2.0);
  EXPECT_TRUE(j["top_logprobs"][0].is_null());
  // The alternatives plus the chosen token.
  EXPECT_EQ(j["top_logprobs"][1].size(), 2u);
  EXPECT_DOUBLE_EQ(j["top_logprobs"][1][" upon"].get<double>(), -2.0);
  EXPECT_EQ(j["top_logprobs"][2].size(), 1u);
  EXPECT_EQ(j["text_offset"], Json::array({0, 4, 9}));
  EXPECT_EQ(offset, 11);
}

}  // namespace
}  // namespace brisk::api
