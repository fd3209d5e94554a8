// Function tools on /v1/chat/completions: `tools`, `tool_choice`,
// `parallel_tool_calls` in, and the output grammar of a tool call out.
//
// What the model may write when it must call a tool is one JSON object
//   {"name": <a tool's name, const>, "arguments": <that tool's parameters>}
// (an anyOf over the tools; compact JSON, "name" first), or with
// parallel_tool_calls (the default) under tool_choice "required" a
// non-empty JSON array of them. A named tool_choice allows exactly one call
// to that function. The response turns it into message.tool_calls.
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
//               then the grammar of one call object (above, not an array)
//               constrains the rest: the object's closing '}' ends the
//               generation (only end-of-generation may follow, so a closing
//               marker such as </tool_call> is never written; bytes of the
//               trigger's token the compact grammar does not take, e.g. a
//               space, are dropped).
//               The trigger (AutoToolCallTrigger): a template that writes
//               calls as "<tool_call>\n{...}\n</tool_call>" (Hermes, Qwen)
//               has the marker "<tool_call>" (dropped, wherever it starts);
//               templates without a marker (SmolLM2's, Gemma's: they do not
//               show `tools` to the model) have a JSON object start
//               {"name" at the very beginning of the answer (leading
//               whitespace dropped). Text before the trigger streams as
//               content (a possible start of the trigger is held back, as
//               stop strings are); the trigger and the call do not. With
//               response_format, "auto" is "none". The Responses API does
//               the same: text before the call is a message item ahead of
//               the function_call items. The x-brisk-tool-choice response header says what applied
//               ("auto" | "none" | "required" | "named").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/lazy_constraint.h"
#include "server/openai_fields.h"

namespace brisk::api {

// (ToolDef, ToolChoice, ToolsRequest: openai_request.h.)

// The JSON Schema (text) of what the model writes for a tool call; `named`
// restricts it to that tool, `parallel` makes it an array of calls.
std::string ToolCallSchema(const std::vector<ToolDef>& tools, const std::string* named,
                           bool parallel);

// "call_" followed by 24 random [A-Za-z0-9]. Thread-safe.
std::string NewToolCallId();

// For "auto": the trigger that starts a tool call in the model's free text,
// from its chat template's source (see above).
ConstraintTrigger AutoToolCallTrigger(std::string_view chat_template_source);

namespace fields {

// Parses tools / tool_choice / parallel_tool_calls. Unset when the body
// has no tools (tool_choice "none"/"auto" without tools are accepted; a
// tool_choice that needs tools is a 400).
Problem ParseTools(const Json& body, std::optional<ToolsRequest>* out);

}  // namespace fields
}  // namespace brisk::api
