// Function tools on /v1/chat/completions: `tools`, `tool_choice`,
// `parallel_tool_calls` in, and the output grammar of a tool call out.
//
// What the model may write when it must call a tool is one JSON object
//   {"name": <a tool's name, const>, "arguments": <that tool's parameters>}
// (an anyOf over the tools; compact JSON, "name" first), or with
// parallel_tool_calls (the default) several: under tool_choice "required" a
// non-empty JSON array of them, under "auto" the template's form (below).
// A named tool_choice, or parallel_tool_calls false, allows exactly one
// call. The response turns them into message.tool_calls.
//
// tool_choice:
//   "none"      no call: plain text (the tools are still shown to the
//               model's chat template, as OpenAI does);
//   "required"  the grammar above;
//   {"type": "function", "function": {"name": N}}: one call to N;
//   "auto"      (the default with tools) the model chooses, as with vLLM
//               and llama.cpp: it writes free text, and if it starts a tool
//               call by its chat template's convention, the call becomes
//               message.tool_calls (finish_reason "tool_calls"); otherwise
//               the text is message.content (finish_reason stop/length).
//               Like llama.cpp's lazy grammar (engine/lazy_constraint.h):
//               generation is free until a trigger appears in the output,
//               then a tool-call grammar constrains the rest, to the end of
//               the generation (bytes of the trigger's token the compact
//               grammar does not take, e.g. a space, are dropped).
//               The trigger and grammar (AutoToolCallFormat):
//               - a template that writes calls as
//                 "<tool_call>\n{...}\n</tool_call>" (Hermes, Qwen) has the
//                 marker "<tool_call>" (dropped, wherever it starts). The
//                 grammar is one call object; with parallel_tool_calls (the
//                 default) one or more, separated by the template's own
//                 "\n</tool_call>\n<tool_call>\n" (a bare sequence:
//                 ConstraintSpec::separator): after each call's closing '}'
//                 the model ends, or writes the separator and the next call,
//                 or ends after the separator's "\n</tool_call>" (its
//                 separator_end: a model trained on these tags closes its
//                 last call so). Without parallel calls the answer ends at
//                 the call's '}'. The separators and closing tags are not
//                 content. Each call is one entry of message.tool_calls
//                 (tool_call_parser.h); cut off inside a later call
//                 (max_tokens), the calls closed before it are the answer,
//                 finish_reason "length";
//               - templates without a marker (SmolLM2's, Gemma's: they do
//                 not show `tools` to the model) have a JSON object start
//                 {"name" at the very beginning of the answer (leading
//                 whitespace dropped): one call object; with
//                 parallel_tool_calls also an array of calls [{"name" (the
//                 grammar of "required"), each element one tool call.
//               Text before the trigger streams as content (a possible start
//               of the trigger is held back, as stop strings are); the
//               trigger and the calls do not: streamed, each call's deltas
//               carry its index (0, 1, ...). With response_format, "auto" is
//               "none". The Responses API does the same: text before the
//               calls is a message item ahead of one function_call item per
//               call. The x-brisk-tool-choice response header says what
//               applied ("auto" | "none" | "required" | "named").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/lazy_constraint.h"
#include "server/openai_fields.h"

namespace brisk::api {

// (ToolDef, ToolChoice, ToolsRequest: openai_request.h.)

// What a tool-call grammar takes: one call object, a non-empty JSON array of
// them, or either (the first byte tells).
enum class ToolCallShape { kOne, kArray, kOneOrArray };

// The JSON Schema (text) of what the model writes for a tool call; `named`
// restricts it to that tool (and to one call, whatever the shape).
std::string ToolCallSchema(const std::vector<ToolDef>& tools, const std::string* named,
                           ToolCallShape shape);

// "call_" followed by 24 random [A-Za-z0-9]. Thread-safe.
std::string NewToolCallId();

// For "auto", from the chat template's source (see above): the trigger that
// starts tool calls in the model's free text, and the grammar from there on:
// the schema's shape and, for several calls one after another, the bytes
// between two calls (ConstraintSpec::separator).
struct AutoToolCalls {
  ConstraintTrigger trigger;
  ToolCallShape shape = ToolCallShape::kOne;
  std::string separator;
  uint32_t separator_end = 0;  // the answer may end after the separator's closing tag
};
AutoToolCalls AutoToolCallFormat(std::string_view chat_template_source, bool parallel);

namespace fields {

// Parses tools / tool_choice / parallel_tool_calls. Unset when the body
// has no tools (tool_choice "none"/"auto" without tools are accepted; a
// tool_choice that needs tools is a 400).
Problem ParseTools(const Json& body, std::optional<ToolsRequest>* out);

}  // namespace fields
}  // namespace brisk::api
