// Turns an API request's messages or prompt into token ids: the model's chat
// template plus its tokenizer, with the rule that keeps users from forging
// turn boundaries.
//
// The special-token rule. Text the chat template writes may produce control
// tokens (<|im_start|>, <end_of_turn>, the bos_token it prints); every string
// that came from the messages (content, role, name, tool_call_id, text parts,
// object keys) is tokenized as plain text, so a user who types "<|im_end|>"
// gets the tokens of those ten characters, never the control token. How:
//  1. Before rendering, every control-token string inside a message string
//     is replaced by a placeholder no valid request can contain (0xFF, a
//     decimal index, 0xFE: bytes that are never valid UTF-8; the API layer
//     rejects bodies that are not UTF-8, and EncodeChat rejects messages
//     holding those bytes).
//  2. The template renders; each placeholder in its output is replaced by the
//     literal text it stands for and its byte range is recorded.
//  3. The output is tokenized with special tokens parsed everywhere except
//     over those ranges (Tokenizer::EncodeWithPlainRanges): a control token
//     that would overlap one is not matched, and the literal text is
//     tokenized exactly as plain text, merged with its neighbours.
// A template filter sees a placeholder instead of the special string (trim,
// upper, tojson keep it whole, and the original text is put back, so a
// filter that would have changed that text, such as upper or escape, does
// not); a template that cuts one apart (slicing, reversing) makes EncodeChat
// fail with InvalidArgument.
//
// Edges: a control token could also be assembled across the edge of a
// message string, from a partial token at the end of one string and the rest
// in the next text part (Gemma 3's template joins text parts with no
// separator after trimming each) or in the template's own markup. So a
// string's edges (raw and whitespace-trimmed) that are a proper prefix (at
// the end) or suffix (at the start) of some control token are protected too.
// Those edge placeholders are used only when the template's output with them
// is the same text as without (a second render, done only when such an edge
// exists); otherwise the edges are left unprotected.
//
// Messages without any control-token string render to exactly the text the
// template gives them, and without a forged token tokenize exactly as
// Encode(text, add_special=true, parse_special=true).
//
// The tokenizer must outlive the renderer. All methods are const and may run
// from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/chat_template.h"
#include "model/tokenizer.h"
#include "util/status.h"

namespace brisk {

class GgufFile;

// A rendered chat prompt before tokenization.
struct RenderedPrompt {
  std::string text;              // the template's output, literal text restored
  std::vector<TextRange> plain;  // bytes of `text` where no control token may match
};

class PromptRenderer {
 public:
  // `tmpl` may be empty (a model without a chat template): EncodeChat then
  // fails with InvalidArgument.
  PromptRenderer(const Tokenizer& tokenizer, std::optional<ChatTemplate> tmpl);
  ~PromptRenderer();
  PromptRenderer(const PromptRenderer&) = delete;
  PromptRenderer& operator=(const PromptRenderer&) = delete;

  // Reads tokenizer.chat_template from the GGUF (absent: no template, except
  // for gemma3, whose fixed turn format is built in); a template that does
  // not parse is an error naming the file.
  static Expected<std::unique_ptr<PromptRenderer>> FromGguf(const GgufFile& file,
                                                            const Tokenizer& tokenizer);
  // A Jinja template `source` read from `template_path` instead of the
  // model file's (vLLM's --chat-template, llama-server's
  // --chat-template-file): one that does not parse is an error naming it.
  static Expected<std::unique_ptr<PromptRenderer>> FromTemplateText(
      const std::string& source, const std::string& template_path, const Tokenizer& tokenizer);

  bool has_chat_template() const { return tmpl_.has_value(); }
  const ChatTemplate* chat_template() const { return tmpl_ ? &*tmpl_ : nullptr; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  int32_t vocab_size() const { return tokenizer_.vocab_size(); }

  // Renders `messages` (a JSON array of message objects as the OpenAI parser
  // produces them: role, content (a string, or any JSON the template
  // accepts, e.g. an array of text parts), optional name / tool_call_id /
  // tool_calls) as HF transformers does: add_generation_prompt = true,
  // bos_token / eos_token = the tokenizer's texts, tools = `tools` or None, documents = None.
  // Errors: InvalidArgument (no template; the template raised, with its
  // message, or failed; message strings that are not UTF-8; a template that
  // cut a protected string apart), ResourceExhausted (template limits).
  // add_generation_prompt = false renders the conversation without the
  // assistant turn's opening (for counting tokens: /tokenize).
  // `tools` (optional): the request's function tools in OpenAI's shape, the
  // template's `tools` variable (protected like message strings).
  // `variables` (optional): a JSON object of further template variables
  // (vLLM's chat_template_kwargs, e.g. enable_thinking), strings protected
  // like message strings; the variables above are set after them and win.
  Expected<RenderedPrompt> RenderChat(const nlohmann::ordered_json& messages,
                                      bool add_generation_prompt = true,
                                      const nlohmann::ordered_json* tools = nullptr,
                                      const nlohmann::ordered_json* variables = nullptr) const;

  // RenderChat, then tokenize: special tokens written by the template are
  // control tokens, every string from the messages is plain text. BOS/EOS
  // are added as the model's tokenizer config asks (Encode's add_special),
  // except a BOS the template printed itself (Gemma 3's): one BOS, as the
  // model was trained.
  Expected<std::vector<int32_t>> EncodeChat(
      const nlohmann::ordered_json& messages, const nlohmann::ordered_json* tools = nullptr,
      const nlohmann::ordered_json* variables = nullptr) const;
  // Tokens of a rendered chat prompt (what EncodeChat feeds the model). With
  // add_special, the tokenizer's BOS unless the template wrote it already.
  std::vector<int32_t> EncodeRendered(const RenderedPrompt& p, bool add_special = true) const;

  // /v1/completions prompt text: the caller writes the whole prompt, template
  // markup included, so special-token strings ARE parsed (as llama.cpp's
  // server and vLLM do); BOS added as the model asks.
  std::vector<int32_t> EncodeCompletion(std::string_view prompt) const;

  // The control-token texts a message string is searched for (CONTROL and
  // UNKNOWN tokens: those only parsed with parse_special).
  struct SpecialStrings;

 private:
  const Tokenizer& tokenizer_;
  std::optional<ChatTemplate> tmpl_;
  std::string bos_text_, eos_text_;
  std::unique_ptr<const SpecialStrings> specials_;
};

}  // namespace brisk
