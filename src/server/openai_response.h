// OpenAI response bodies and SSE events for /v1/chat/completions,
// /v1/completions and /v1/models: plain data in, bytes to send out. Pure
// functions, no I/O. All bodies are compact JSON; invalid UTF-8 in any string
// is replaced by U+FFFD, so the output is always valid UTF-8 JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/openai_request.h"

namespace brisk::api {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
  // Speculative decoding: completion tokens that were accepted draft tokens.
  // Sent (as the extension usage.speculative_accepted_tokens) only when > 0.
  int64_t accepted_draft_tokens = 0;
};

// GET /v1/models: {"object": "list", "data": [{"id", "object": "model",
// "created", "owned_by": "brisk"}]}
// `brisk_info` (not null): an extension object "brisk" on each model.
std::string ModelsBody(const std::vector<std::string>& model_ids, int64_t created_unix,
                       const nlohmann::ordered_json& brisk_info = nullptr);

struct Choice {
  int index = 0;
  std::string text;
  std::string finish_reason;  // "stop" | "length" | ...; "" is sent as null
  // The choice's "logprobs" (openai_logprobs.h); null when not asked for.
  nlohmann::ordered_json logprobs = nullptr;
  // Chat: non-null = message.tool_calls (content: the text before the call,
  // null when there is none).
  nlohmann::ordered_json tool_calls = nullptr;
  // Chat: the model's reasoning (server/reasoning.h), message.reasoning_content
  // when not empty.
  std::string reasoning = "";
};

// Non-streaming response: "chat.completion" with choices[{index,
// message{role: "assistant", content}, logprobs: null, finish_reason}], or
// "text_completion" with choices[{text, index, logprobs: null,
// finish_reason}]; both with usage{prompt_tokens, completion_tokens,
// total_tokens, prompt_tokens_details{cached_tokens}} and
// system_fingerprint "brisk".
std::string CompletionBody(Endpoint ep, std::string_view id, std::string_view model,
                           int64_t created, const std::vector<Choice>& choices, const Usage& u);

// One streamed choice delta as a full SSE event "data: {...}\n\n".
// Chat ("chat.completion.chunk"): delta carries "role" when `role` is given
// (the first chunk of a choice) and "content" when role is given or
// delta_text is non-empty, so the first chunk is {"role": "assistant",
// "content": ""} and a final chunk with only a finish_reason has delta {},
// as OpenAI sends them. Completions ("text_completion"): "text" is always
// present and `role` is ignored. With `usage` (vLLM's
// stream_options.continuous_usage_stats), the chunk carries "usage" as in
// CompletionBody. `logprobs` (else null) is the choice's "logprobs".
std::string SseChunk(Endpoint ep, std::string_view id, std::string_view model, int64_t created,
                     int index, std::optional<std::string_view> role, std::string_view delta_text,
                     std::optional<std::string_view> finish_reason, const Usage* usage = nullptr,
                     const nlohmann::ordered_json* logprobs = nullptr);

// A chat chunk whose delta is `delta` as given (tool-call deltas:
// {"tool_calls": [{"index", "id", "type", "function": {"name", "arguments"}}]}).
std::string SseDeltaChunk(std::string_view id, std::string_view model, int64_t created, int index,
                          nlohmann::ordered_json delta,
                          std::optional<std::string_view> finish_reason,
                          const Usage* usage = nullptr,
                          const nlohmann::ordered_json* logprobs = nullptr);

// The stream_options.include_usage chunk, sent after the last choice chunk
// and before kSseDone: "choices": [] and "usage" as in CompletionBody.
std::string SseUsageChunk(Endpoint ep, std::string_view id, std::string_view model, int64_t created,
                          const Usage& u);

inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// "chatcmpl-" / "cmpl-" followed by 24 random [A-Za-z0-9]. Thread-safe.
std::string NewRequestId(Endpoint ep);

}  // namespace brisk::api
