// Renders a model's own chat template (`tokenizer.chat_template`, Jinja2) the
// way HF transformers' apply_chat_template does: jinja2 with
// trim_blocks=True, lstrip_blocks=True, the loopcontrols extension
// (break/continue), {% generation %} blocks, and the globals
// raise_exception(msg) and strftime_now(fmt); `tojson` is json.dumps with
// ensure_ascii=False. Undefined variables behave like jinja2's default
// Undefined: they print as "" and test false, and using one any other way
// (attribute, call, arithmetic) is an error.
//
// The Jinja subset is what real chat templates use: {{ }}, {% %}, {# #},
// whitespace control, if/elif/else, for (loop.*, `if` filter, else,
// break/continue), set (incl. namespace attributes and block set), macros,
// with, filter blocks, raw; Python operators and literals, slicing, string /
// dict / list methods, and jinja2's common filters and tests. Not supported:
// include/import/extends/block, call blocks, recursive loops, *args/**kwargs,
// format specs in str.format, Unicode-aware upper/lower/title (ASCII only),
// integers beyond 64 bits (overflow is an error).
//
// Rendering never crashes or runs away: output size, loop iterations, work
// and nesting depth are capped (ChatTemplateOptions) and any problem in the
// template or the context comes back as a Status. Render and RenderJson are
// const: one parsed template may render from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "jinja/limits.h"
#include "util/status.h"

namespace brisk {

namespace jinja {
struct Template;
}

struct ChatMessage {
  std::string role;
  std::string content;
};

// Render limits (see jinja/limits.h).
using ChatTemplateOptions = jinja::RenderLimits;

class ChatTemplate {
 public:
  // Syntax errors -> InvalidArgument "chat template: LINE:COL: message".
  static Expected<ChatTemplate> Parse(std::string_view source);

  // Renders with the variables HF passes: messages (role, content),
  // add_generation_prompt, bos_token, eos_token, and tools = documents = None.
  // raise_exception(msg) in the template -> InvalidArgument with exactly msg;
  // other template/context errors -> InvalidArgument "LINE:COL: message";
  // limits -> ResourceExhausted.
  Expected<std::string> Render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                               const std::string& bos_token, const std::string& eos_token) const;

  // General entry: every key of `context` (a JSON object) is a template
  // variable, e.g. messages with tool_calls, tools, documents, custom fields.
  // Keys absent from the object are undefined in the template. Use
  // ordered_json to keep object key order (it shows in `tojson` output and in
  // dict iteration); plain nlohmann::json sorts object keys.
  Expected<std::string> RenderJson(const nlohmann::ordered_json& context) const;
  Expected<std::string> RenderJson(const nlohmann::json& context) const;

  void set_options(const ChatTemplateOptions& options) { options_ = options; }
  const ChatTemplateOptions& options() const { return options_; }
  const std::string& source() const { return *source_; }

 private:
  ChatTemplate(std::shared_ptr<const jinja::Template> tmpl,
               std::shared_ptr<const std::string> source)
      : tmpl_(std::move(tmpl)), source_(std::move(source)) {}

  std::shared_ptr<const jinja::Template> tmpl_;
  std::shared_ptr<const std::string> source_;
  ChatTemplateOptions options_;
};

}  // namespace brisk
