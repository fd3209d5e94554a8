// Reasoning output apart from the answer (server/reasoning.h), at the front
// door: the Qwen3 chat template fixture (it has <think> markers, so
// model.reasoning "auto" takes them) over the scripted engine, whose output
// is the model's text as written.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "server/openai_extensions.h"
#include "server/openai_server.h"
#include "server/openai_server_test_fixture.h"

namespace brisk {
namespace {

using namespace openai_server_test;

const std::string kQwen3Template =
    std::string(BRISK_SOURCE_DIR) + "/tests/fixtures/chat_templates/qwen3.jinja";

class ReasoningServerTest : public OpenAiServerTest {
 protected:
  void SetUp() override {
    OpenAiServerTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    std::ifstream f(kQwen3Template);
    ASSERT_TRUE(f) << kQwen3Template;
    std::stringstream ss;
    ss << f.rdbuf();
    auto r = PromptRenderer::FromTemplateText(ss.str(), kQwen3Template, *tok_);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    renderer_ = std::move(*r);
  }
  // The text of the last submitted request's prompt.
  std::string LastPrompt() {
    auto s = engine_.submitted();
    return s.empty() ? "" : tok_->Decode(s.back().request.prompt, /*skip_special=*/false);
  }
  static std::string Chat(const std::string& extra = "") {
    return R"({"model":"scripted-model","messages":[{"role":"user","content":"A color?"}])" +
           extra + "}";
  }
};

const std::vector<std::string> kThinkThenAnswer = {"<think>\nThe user ", "wants a color.\n</th",
                                                   "ink>\n\n", "Blue."};

TEST_F(ReasoningServerTest, ChatReturnsTheReasoningApartFromTheContent) {
  engine_.pieces = kThinkThenAnswer;
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", Chat());
  ASSERT_EQ(r.status, 200) << r.body;
  const json m = json::parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(m["content"], "Blue.");
  EXPECT_EQ(m["reasoning_content"], "The user wants a color.");
  EXPECT_TRUE(LastPrompt().ends_with("<|im_start|>assistant\n")) << LastPrompt();

  // Streamed: reasoning_content deltas, then content deltas.
  Reply s = Call("POST", "/v1/chat/completions", Chat(R"(,"stream":true)"));
  ASSERT_EQ(s.status, 200) << s.body;
  std::string reasoning, content;
  bool content_seen = false;
  for (const json& e : SseEvents(s.body)) {
    if (e.is_string() || e["choices"].empty()) continue;
    const json& d = e["choices"][0]["delta"];
    if (d.contains("reasoning_content")) {
      EXPECT_FALSE(content_seen) << "reasoning after the answer began";
      reasoning += d["reasoning_content"].get<std::string>();
    }
    if (d.contains("content") && d["content"].is_string()) {
      content += d["content"].get<std::string>();
      content_seen = content_seen || !d["content"].get<std::string>().empty();
    }
  }
  EXPECT_EQ(reasoning, "The user wants a color.");
  EXPECT_EQ(content, "Blue.");
}

TEST_F(ReasoningServerTest, AnAnswerWithoutThinkingHasNoReasoning) {
  engine_.pieces = {"Blue", "."};
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", Chat());
  const json m = json::parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(m["content"], "Blue.");
  EXPECT_FALSE(m.contains("reasoning_content"));
}

TEST_F(ReasoningServerTest, ChatTemplateKwargsReachTheTemplate) {
  engine_.pieces = {"<think>x</think>", "Blue."};
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions",
                 Chat(R"(,"chat_template_kwargs":{"enable_thinking":false})"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(LastPrompt().ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"))
      << LastPrompt();
  // The template closed the block: the output is all answer.
  const json m = json::parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(m["content"], "<think>x</think>Blue.");
  EXPECT_FALSE(m.contains("reasoning_content"));

  // /tokenize renders with them too; bad ones are a 400 naming the field.
  Reply t = Call("POST", "/tokenize",
                 R"({"messages":[{"role":"user","content":"A color?"}],"return_token_strs":true,)"
                 R"("chat_template_kwargs":{"enable_thinking":false}})");
  ASSERT_EQ(t.status, 200) << t.body;
  std::string text;
  const json tokenized = json::parse(t.body);
  for (const json& piece : tokenized["token_strs"]) text += piece.get<std::string>();
  EXPECT_NE(text.find("</think>"), std::string::npos) << t.body;
  for (const char* bad : {R"("chat_template_kwargs":[1])", R"("chat_template_kwargs":{"1x":1})",
                          R"("chat_template_kwargs":{"messages":[]})"}) {
    Reply b = Call("POST", "/v1/chat/completions", Chat(std::string(",") + bad));
    EXPECT_EQ(b.status, 400) << bad;
    EXPECT_EQ(
        json::parse(b.body)["error"]["param"].get<std::string>().rfind("chat_template_kwargs", 0),
        0u)
        << b.body;
  }
  const std::string big(api::fields::kMaxChatTemplateKwargsBytes + 1, 'a');
  Reply b = Call("POST", "/v1/chat/completions",
                 Chat(R"(,"chat_template_kwargs":{"s":")" + big + R"("})"));
  EXPECT_EQ(b.status, 400) << b.body.substr(0, 200);
}

TEST_F(ReasoningServerTest, AFormatConstrainsOnlyTheAnswer) {
  // The front door opens the block; the constraint starts at its end marker.
  engine_.pieces = {"Some thought.", R"({"color":"blue"})"};
  engine_.trigger_piece = 1;
  engine_.trigger_at = 0;
  StartServer();
  Reply r =
      Call("POST", "/v1/chat/completions", Chat(R"(,"response_format":{"type":"json_object"})"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(LastPrompt().ends_with("<|im_start|>assistant\n<think>\n")) << LastPrompt();
  const auto submitted = engine_.submitted();
  EXPECT_EQ(submitted.back().request.constraint_trigger.text, "</think>");
  const json m = json::parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(m["content"], R"({"color":"blue"})");
  EXPECT_EQ(m["reasoning_content"], "Some thought.");
}

TEST_F(ReasoningServerTest, OffLeavesTheMarkersInTheContent) {
  config_.model.reasoning = "off";
  engine_.pieces = kThinkThenAnswer;
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", Chat());
  const json m = json::parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(m["content"], "<think>\nThe user wants a color.\n</think>\n\nBlue.");
  EXPECT_FALSE(m.contains("reasoning_content"));
}

TEST_F(ReasoningServerTest, ResponsesHaveAReasoningItemFirst) {
  engine_.pieces = kThinkThenAnswer;
  StartServer();
  const std::string body = R"({"model":"scripted-model","input":"A color?","store":false)";
  Reply r = Call("POST", "/v1/responses", body + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  const json out = json::parse(r.body)["output"];
  ASSERT_EQ(out.size(), 2u) << r.body;
  EXPECT_EQ(out[0]["type"], "reasoning");
  EXPECT_EQ(out[0]["content"][0]["text"], "The user wants a color.");
  EXPECT_EQ(out[1]["type"], "message");
  EXPECT_EQ(out[1]["content"][0]["text"], "Blue.");

  Reply s = Call("POST", "/v1/responses", body + R"(,"stream":true})");
  ASSERT_EQ(s.status, 200) << s.body;
  std::vector<std::string> types;
  std::string reasoning;
  for (const json& e : SseEvents(s.body)) {
    if (!e.is_object()) continue;
    const std::string type = e["type"];
    if (type == "response.reasoning_text.delta") {
      reasoning += e["delta"].get<std::string>();
      EXPECT_EQ(e["output_index"], 0);
    }
    if (type == "response.output_text.delta") {
      EXPECT_EQ(e["output_index"], 1);
    }
    if (type == "response.output_item.added") types.push_back(e["item"]["type"]);
    if (type == "response.completed") {
      EXPECT_EQ(e["response"]["output"].size(), 2u);
    }
  }
  EXPECT_EQ(reasoning, "The user wants a color.");
  EXPECT_EQ(types, (std::vector<std::string>{"reasoning", "message"}));

  // A follow-up that sends the reasoning item back (openai-agents does) is fine.
  Reply f =
      Call("POST", "/v1/responses",
           R"({"model":"scripted-model","input":[)"
           R"({"role":"user","content":"A color?"},)" +
               out[0].dump() + "," + out[1].dump() + R"(,{"role":"user","content":"Another?"}]})");
  EXPECT_EQ(f.status, 200) << f.body;
}

}  // namespace
}  // namespace brisk
