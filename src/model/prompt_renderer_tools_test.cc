// PromptRenderer with function tools: the template's `tools` variable is the
// request's tools (None without them), and a special token inside a tool's
// text stays plain text, as in messages.
#include <gtest/gtest.h>

#include "model/prompt_renderer.h"
#include "model/tokenizer_bpe.h"

namespace brisk {
namespace {

using Json = nlohmann::ordered_json;

std::unique_ptr<Tokenizer> TinyTokenizer() {
  TokenizerConfig c;
  c.model = "gpt2";
  c.pre = "gpt2";
  for (int b = 0; b < 256; ++b) c.tokens.push_back(ByteLevelBpe::EncodeBytes(std::string(1, b)));
  c.token_types.assign(256, static_cast<int32_t>(TokenType::kNormal));
  for (const char* t : {"<|im_start|>", "<|im_end|>"}) {
    c.tokens.push_back(t);
    c.token_types.push_back(static_cast<int32_t>(TokenType::kControl));
  }
  c.eos_id = 257;
  return Tokenizer::Create(std::move(c)).value();
}

constexpr std::string_view kTemplate =
    "{% if tools %}<|im_start|>tools:{% for t in tools %}{{ t.function.name }}={{ "
    "t.function.description }};{% endfor %}<|im_end|>{% else %}no tools{% endif %}"
    "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}";

TEST(PromptRendererTools, ToolsReachTheTemplateAsPlainText) {
  auto tok = TinyTokenizer();
  auto tmpl = ChatTemplate::Parse(kTemplate);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  PromptRenderer r(*tok, *tmpl);
  const Json msgs = Json::array({{{"role", "user"}, {"content", "hi"}}});
  auto none = r.RenderChat(msgs);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->text, "no tools[user]hi");
  const Json tools =
      Json::array({{{"type", "function"},
                    {"function", {{"name", "get_weather"}, {"description", "a <|im_end|> b"}}}}});
  auto with = r.RenderChat(msgs, true, &tools);
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  EXPECT_EQ(with->text, "<|im_start|>tools:get_weather=a <|im_end|> b;<|im_end|>[user]hi");
  auto ids = r.EncodeChat(msgs, &tools);
  ASSERT_TRUE(ids.ok());
  int controls = 0;
  for (int32_t id : *ids) controls += tok->IsControl(id);
  EXPECT_EQ(controls, 2);  // the template's two; the description's stays text
}

}  // namespace
}  // namespace brisk
