// OpenAI's Responses API (POST /v1/responses) on top of the chat path:
// a Responses body becomes a chat completions body, and a chat result
// becomes a response object or the Responses stream's typed events. Pure
// functions, no I/O; the server (openai_server_responses.cc) runs them and
// the stream (responses_stream.h) sends them.
//
// Request translation:
//   instructions          -> a system message first (not carried over to a
//                            follow-up, as OpenAI does)
//   input                 -> messages: a string is one user message; an array
//                            holds message items ({role, content: string or
//                            input_text / output_text parts}), function_call
//                            items (-> an assistant message's tool_calls) and
//                            function_call_output items (-> tool messages)
//   max_output_tokens     -> max_tokens
//   text.format           -> response_format (text | json_object | json_schema)
//   tools (function only) -> tools; tool_choice, parallel_tool_calls likewise
//   temperature, top_p, metadata, user, and Brisk's extensions (priority,
//   timeout, top_k, min_p, repetition_penalty, seed, ignore_eos, stop):
//   as they are. Built-in tools, non-text input and the other features
//   Brisk does not have are a 400 naming the field (code "unsupported").
// The chat parser then checks every value; its errors are renamed to the
// Responses fields (ResponsesError).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "http/responses_items.h"
#include "server/openai_api.h"

namespace brisk::api {

using Json = nlohmann::ordered_json;

struct ResponsesRequest {
  std::string model;
  bool stream = false;
  bool store = true;
  std::string previous_response_id;  // "" = none
  // `input` as chat messages (no instructions).
  Json input_messages = Json::array();
  // `input` as Responses items, each with an id (the client's, or a new
  // one), as GET /v1/responses/{id}/input_items lists them.
  Json input_items = Json::array();
  // The chat body without "messages" (model first).
  Json chat = Json::object();
  // Echoed in the response object: the request's values or OpenAI's defaults.
  Json instructions = nullptr, metadata = Json::object(), temperature = 1.0, top_p = 1.0,
       max_output_tokens = nullptr, text = Json{{"format", {{"type", "text"}}}},
       tool_choice = "auto", tools = Json::array(), parallel_tool_calls = true, user = nullptr;
  // Unknown keys skipped (ParseOptions::ignore_unknown_fields).
  std::vector<std::string> ignored_fields;
};

std::variant<ResponsesRequest, ApiError> ParseResponsesRequest(std::string_view body,
                                                               const ParseOptions& options = {});

// The chat completions body: the instructions as a system message, then
// `history` (a stored conversation; an array, may be empty), then the input.
std::string ChatBody(const ResponsesRequest& r, const Json& history);

// A chat parser error with the Responses field names (max_tokens ->
// max_output_tokens, response_format -> text.format, messages -> input, ...).
ApiError ResponsesError(ApiError e);

// "resp_", "msg_", "fc_", "rs_" followed by 32 random [a-z0-9]. Thread-safe.
std::string NewResponseId();
std::string NewMessageItemId();
std::string NewFunctionCallItemId();
std::string NewReasoningItemId();

// {"type": "reasoning", "id", "status", "summary": [], "content":
//  [{"type": "reasoning_text", "text"}]}: the model's reasoning
// (server/reasoning.h), before the message and calls.
Json ReasoningItem(const std::string& id, std::string_view status, const std::string& text);

// {"type": "message", "id", "status", "role": "assistant", "content": [...]}:
// one output_text part with `text`, or no part when `with_part` is false
// (the item as response.output_item.added announces it).
Json MessageItem(const std::string& id, std::string_view status, const std::string& text,
                 bool with_part = true);
// {"type": "output_text", "text", "annotations": [], "logprobs": []}
Json OutputTextPart(const std::string& text);
// {"type": "function_call", "id", "call_id", "name", "arguments", "status"}
Json FunctionCallItem(const std::string& id, const std::string& call_id, const std::string& name,
                      const std::string& arguments, std::string_view status);

// {"input_tokens", "input_tokens_details": {"cached_tokens"}, "output_tokens",
//  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens"}
Json ResponsesUsage(const Usage& u);

// The response object. status: in_progress | completed | incomplete |
// failed; incomplete sets incomplete_details {"reason": "max_output_tokens"};
// usage null unless given.
Json ResponseObject(const ResponsesRequest& r, const std::string& id, int64_t created_at,
                    const std::string& model, std::string_view status, Json output,
                    const Usage* usage);

// Output items as chat messages (what a follow-up's history holds): a
// message item -> an assistant message; function_call items -> one assistant
// message's tool_calls.
Json OutputToMessages(const Json& output);

// One Responses stream event: "event: <type>\ndata: {"type", ...fields,
// "sequence_number"}\n\n". `*seq` is the next sequence number; it advances.
std::string ResponsesEvent(std::string_view type, Json fields, int64_t* seq);

// Stored items and their paging (shared with the gateway's store).
using http::InputItemsPage;
using http::InputItemsQuery;
using http::ParseInputItemsQuery;
using http::ResponseNotFound;

}  // namespace brisk::api
