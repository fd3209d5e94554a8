// The OpenAI HTTP API's schema layer for /v1/chat/completions and
// /v1/completions: request bodies in, validated plain data out; plain data in,
// response bodies and SSE events out. Pure functions, no I/O, no engine calls.
//
// Parsing never throws and never crashes on any byte string. Every client
// mistake becomes an ApiError with HTTP 400 and the OpenAI error shape
// {"error": {"message", "type", "param", "code"}}:
//   - the body is not valid UTF-8, not valid JSON (message has the byte
//     offset), or not a JSON object;
//   - a required field (model; messages or prompt) is missing or null;
//   - a field has the wrong type: "'temperature' must be a number, got string"
//     (code "invalid_type"). Integer fields accept integral floats (16.0);
//     booleans are never numbers;
//   - a value is out of range, naming the range (code "invalid_value");
//   - an unknown top-level field: "Unrecognized request argument supplied: X"
//     (code "unknown_parameter"). Keys inside messages, content parts and
//     stream_options are checked the same way, except that there an unknown
//     key with a null value is ignored (SDK objects echoed back as history
//     carry e.g. "reasoning_content": null);
//   - a known feature Brisk does not implement yet (tools, functions,
//     response_format other than text, logit_bias, logprobs, echo, suffix,
//     best_of > 1, audio, non-text modalities, non-text content parts, ...):
//     code "unsupported", the message says what.
// `null` for any known optional field means "not given". Fields clients send
// by habit and that change nothing here (user, metadata, store, service_tier,
// parallel_tool_calls: false, prompt_cache_key, safety_identifier) are
// accepted.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/sampler.h"
#include "util/status.h"

namespace brisk::api {

enum class Endpoint { kChatCompletions, kCompletions };
enum class Priority { kInteractive, kBatch };

inline constexpr int kMaxN = 128;      // "n" upper bound; the server may cap lower
inline constexpr size_t kMaxStop = 4;  // stop strings per request (as OpenAI)
inline constexpr int kMaxTopLogprobs = 20;

struct ApiRequest {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::string model;  // non-empty

  // Chat: an array of objects {role, content[, name][, tool_call_id]} with
  // role one of system/user/assistant/developer/tool and content always a
  // string: an array of text parts is joined with "\n" (as vLLM does); an
  // assistant message with null or no content gets "". Ready for
  // ChatTemplate::RenderJson.
  nlohmann::ordered_json messages;

  // Completions: exactly one of the two is non-empty. A string or an array of
  // strings (each non-empty) fills `prompts`; an array of token ids or an
  // array of such arrays fills `prompt_tokens` (ids >= 0; the server checks
  // them against the vocab). Each prompt yields `n` choices; choice index =
  // prompt_index * n + j, as OpenAI numbers them.
  std::vector<std::string> prompts;
  std::vector<std::vector<int32_t>> prompt_tokens;

  bool stream = false;
  // stream_options.include_usage; always false when stream is false (OpenAI
  // only defines stream_options for streams; it is accepted and ignored).
  bool include_usage = false;
  int n = 1;  // [1, kMaxN]
  // max_tokens, or for chat max_completion_tokens (if both are given they
  // must agree). >= 1. Unset = the server's default (OpenAI's default for
  // /v1/completions is 16; for chat, the rest of the context).
  std::optional<int> max_tokens;
  std::vector<std::string> stop;  // up to kMaxStop non-empty strings

  // temperature [0, 2], top_p (0, 1], seed (int64, stored as its uint64 bit
  // pattern), frequency_penalty and presence_penalty [-2, 2]; extensions
  // top_k (>= 0; -1 = off as in vLLM, stored as 0), min_p [0, 1],
  // repetition_penalty (0, 10]. Always passes SamplingParams::Validate().
  SamplingParams sampling;
  bool ignore_eos = false;  // extension (vLLM / llama.cpp name)
  std::string user;
  std::optional<Priority> priority;  // extension: "priority": "interactive" | "batch"
  std::optional<double> timeout_s;   // extension: "timeout": seconds, finite, > 0
};

struct ApiError {
  int http_status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // "" is sent as null
  std::string code;   // "" is sent as null
};

// The parsed request, or the exact error to send.
std::variant<ApiRequest, ApiError> ParseRequest(Endpoint endpoint, std::string_view body);

// "interactive" | "batch", ASCII case-insensitive (the X-Priority header and
// the "priority" field); anything else is InvalidArgument.
Expected<Priority> ParsePriority(std::string_view s);

// ---- Responses. All bodies are compact JSON; invalid UTF-8 in any string is
// replaced by U+FFFD, so the output is always valid UTF-8 JSON.

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};

// {"error": {"message", "type", "param", "code"}}
std::string ErrorBody(const ApiError& e);

// GET /v1/models: {"object": "list", "data": [{"id", "object": "model",
// "created", "owned_by": "brisk"}]}
std::string ModelsBody(const std::vector<std::string>& model_ids, int64_t created_unix);

struct Choice {
  int index = 0;
  std::string text;
  std::string finish_reason;  // "stop" | "length" | ...; "" is sent as null
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
// delta_text is non-empty, so a final chunk with only a finish_reason has
// delta {} as OpenAI sends it. Completions ("text_completion"): "text" is
// always present and `role` is ignored.
std::string SseChunk(Endpoint ep, std::string_view id, std::string_view model, int64_t created,
                     int index, std::optional<std::string_view> role, std::string_view delta_text,
                     std::optional<std::string_view> finish_reason);

// The stream_options.include_usage chunk, sent after the last choice chunk
// and before kSseDone: "choices": [] and "usage" as in CompletionBody.
std::string SseUsageChunk(Endpoint ep, std::string_view id, std::string_view model, int64_t created,
                          const Usage& u);

// An error inside a stream that has already started: "data: {"error": ...}\n\n".
std::string SseError(const ApiError& e);

inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// "chatcmpl-" / "cmpl-" followed by 24 random [A-Za-z0-9]. Thread-safe.
std::string NewRequestId(Endpoint ep);

}  // namespace brisk::api
