// Request preparation: everything between a received HTTP request and the
// engine-client Submit, as one pure function: authentication (API key ->
// tenant, feature), the OpenAI body, the server's limits, the priority and
// timeout headers, the chat template and tokenization, and the context budget.
// No I/O, no engine state: the same inputs give the same answer, and a unit
// test drives it with a toy tokenizer.
//
// Expensive for big bodies (parsing, rendering, tokenizing a 4 MiB prompt):
// the server runs it on a worker thread, never on an HTTP I/O thread.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/inference_config.h"
#include "engine/engine_client.h"
#include "engine/generation.h"
#include "grammar/constraint.h"
#include "http/server.h"
#include "model/prompt_renderer.h"
#include "server/openai_api.h"
#include "server/reasoning.h"

namespace brisk {

// What preparation reads besides the request itself.
struct PreparationContext {
  const InferenceConfig* config = nullptr;
  std::string model_id;  // what requests must name
  const PromptRenderer* renderer = nullptr;
  EngineInfo engine;
  // Compiled response_format schemas (may be null: compile every time).
  ConstraintCache* constraints = nullptr;
  // The model's reasoning markers (reasoning.h); empty: no reasoning split.
  ReasoningMarkers reasoning;
};

struct PreparedRequest {
  api::Endpoint endpoint = api::Endpoint::kChatCompletions;
  std::string tenant;   // from the API key; "" without keys
  std::string feature;  // X-Feature header, else the key's feature tag
  Priority priority = Priority::kInteractive;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;  // stream_options.continuous_usage_stats (with include_usage)
  // Unknown body keys skipped under server.unknown_request_fields: ignore.
  std::vector<std::string> ignored_fields;
  int n = 1;  // samples per prompt: choice index = prompt index * n + sample
  // One per prompt (chat: exactly one), ready to Submit.
  std::vector<GenerationRequest> prompts;
  // response_format json_object / json_schema: the grammar every prompt's
  // samples follow (null: text), whether this request compiled it (a cache
  // miss), and the keywords it does not enforce (non-strict requests).
  std::shared_ptr<const CompiledConstraint> constraint;
  bool constraint_compiled_now = false;
  std::vector<UnenforcedKeyword> unenforced_keywords;
  // Logprobs: -1 = none, else alternatives per token (every prompt's
  // GenerationRequest::logprobs). Token texts render control tokens when
  // skip_special_tokens is false.
  int logprobs = -1;
  bool render_special = false;
  // Completions' echo: each prompt's text (token-id prompts decoded).
  std::vector<std::string> echo_prompts;
  // The prompts were token ids: echoed with their special tokens, in the
  // text and in the prompt's logprob records.
  bool echo_token_prompts = false;
  // Tools: the tool_choice that applies ("" without tools, "none", "auto",
  // "required", "named"; see openai_tools.h). Unless "none", `constraint` is
  // the tool-call grammar and the output becomes message.tool_calls;
  // parallel_tool_calls: the grammar lets the model write several calls
  // (a JSON array under "required"; under "auto" the template's form), else
  // one call object. "auto": the grammar is lazy, from `constraint_trigger`
  // on (every prompt's GenerationRequest has it); the text before is content.
  std::string tool_choice;
  bool parallel_tool_calls = false;
  ConstraintTrigger constraint_trigger;
  // Chat with reasoning markers: where the output starts (reasoning.h), and
  // whether the constraint starts at the end marker (its trigger): with a
  // constraint the prompt opens the block, so that it holds for the answer.
  ReasoningMarkers reasoning;
  ReasoningStart reasoning_start = ReasoningStart::kClosed;
  bool constraint_after_reasoning = false;
};

// The host part of a peer address: "127.0.0.1:5555" -> "127.0.0.1",
// "[::1]:5555" -> "::1".
std::string_view RemoteHost(std::string_view remote);

// The tenant and feature an Authorization header maps to, or the 401 to send.
// Without configured keys everyone is the anonymous tenant "".
struct Caller {
  std::string tenant;
  std::string feature;
};
std::variant<Caller, api::ApiError> Authenticate(const InferenceConfig& config,
                                                 std::string_view authorization);

// `arrival` stamps the requests (queue time, deadline).
std::variant<PreparedRequest, api::ApiError> PrepareRequest(const PreparationContext& ctx,
                                                            api::Endpoint endpoint,
                                                            const http::Request& request,
                                                            Clock::time_point arrival);

}  // namespace brisk
