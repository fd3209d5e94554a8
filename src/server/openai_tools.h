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
//   "auto"      (the default with tools) Brisk does not yet detect a tool
//               call in free text by each template's own convention, so
//               the choice is made before generation: when the
//               conversation already has a tool result after the last user
//               message, the model answers in text (the agent loop's
//               "answer" turn); otherwise it must call a tool, as with
//               "required". The x-brisk-tool-choice response header says
//               which ("required" | "none").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/openai_fields.h"

namespace brisk::api {

// (ToolDef, ToolChoice, ToolsRequest: openai_request.h.)

// The JSON Schema (text) of what the model writes for a tool call; `named`
// restricts it to that tool, `parallel` makes it an array of calls.
std::string ToolCallSchema(const std::vector<ToolDef>& tools, const std::string* named,
                           bool parallel);

// "call_" followed by 24 random [A-Za-z0-9]. Thread-safe.
std::string NewToolCallId();

// For "auto": whether the conversation has a tool result after the last
// user message (then the model answers in text).
bool HasToolResultSinceLastUser(const nlohmann::ordered_json& messages);

namespace fields {

// Parses tools / tool_choice / parallel_tool_calls. Unset when the body
// has no tools (tool_choice "none"/"auto" without tools are accepted; a
// tool_choice that needs tools is a 400).
Problem ParseTools(const Json& body, std::optional<ToolsRequest>* out);

}  // namespace fields
}  // namespace brisk::api
