// OpenAI request bodies for /v1/chat/completions and /v1/completions in,
// validated plain data out. Pure functions, no I/O, no engine calls.
//
// Parsing never throws and never crashes on any byte string, and takes time
// linear in the body's size. Every client mistake becomes an ApiError with
// HTTP 400 and the OpenAI error shape {"error": {"message", "type", "param",
// "code"}}:
//   - the body is not valid UTF-8 (code "invalid_encoding"), not valid JSON
//     (code "invalid_json", the message has the byte offset), or not a JSON
//     object;
//   - a key appears twice in one object, at any depth: code "duplicate_key",
//     param is the key's path ("messages[0].role");
//   - the JSON is nested deeper than kMaxJsonDepth or has more than
//     kMaxJsonValues values: code "json_too_complex";
//   - an object has more members than its cap (kMaxMetadataEntries for
//     metadata, kMaxLogitBiasEntries for logit_bias, kMaxObjectMembers for
//     any other): code "invalid_value", param names the object;
//   - a required field (model; messages or prompt) is missing or null;
//   - a field has the wrong type: "'temperature' must be a number, got string"
//     (code "invalid_type"). Integer fields accept integral floats (16.0);
//     booleans are never numbers;
//   - a value is out of range, naming the range (code "invalid_value");
//   - an unknown top-level field: "Unrecognized request argument supplied: X"
//     (code "unknown_parameter"). Keys inside messages, content parts and
//     stream_options are checked the same way, except that there an unknown
//     key with a null value is ignored (SDK objects echoed back as history
//     carry e.g. "reasoning_content": null). With
//     ParseOptions::ignore_unknown_fields, unknown keys are skipped instead
//     and listed in ApiRequest::ignored_fields;
//   - "stream_options" without "stream": true (OpenAI's message);
//   - a known feature Brisk does not implement yet (functions,
//     suffix (no infill template), best_of > 1,
//     audio, non-text modalities, non-text content parts, ...): code
//     "unsupported", the message says what.
// `null` for any known optional field means "not given". Fields clients send
// by habit and that change nothing here (user, metadata, store, service_tier,
// prompt_cache_key, safety_identifier) are
// accepted; metadata must still be what OpenAI allows (string values, the
// sizes below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/priority.h"
#include "engine/sampler.h"
#include "http/openai_error.h"
#include "util/status.h"

namespace brisk::api {

enum class Endpoint { kChatCompletions, kCompletions };

inline constexpr int kMaxN = 128;                 // "n" upper bound; the server may cap lower
inline constexpr size_t kMaxStop = 4;             // stop strings per request (as OpenAI)
inline constexpr int kMaxTopLogprobs = 20;        // chat top_logprobs
inline constexpr int kMaxCompletionLogprobs = 5;  // completions logprobs

// metadata, as OpenAI documents it: at most 16 pairs, keys of at most 64
// characters, values strings of at most 512 characters (characters = code
// points).
inline constexpr size_t kMaxMetadataEntries = 16;
inline constexpr size_t kMaxMetadataKeyChars = 64;
inline constexpr size_t kMaxMetadataValueChars = 512;
// logit_bias: OpenAI's reference documents no count, but its service rejects
// more than 300 entries; that is the most an OpenAI client sends, so it is
// the cap here too.
inline constexpr size_t kMaxLogitBiasEntries = 300;
// stop_token_ids (vLLM extension): more than any model has end tokens.
inline constexpr size_t kMaxStopTokenIds = 128;
// Every other object: no field Brisk reads has more than a few dozen keys.
inline constexpr size_t kMaxObjectMembers = 1024;
// Whole body. The deepest valid request needs 5 levels (body, messages,
// message, content, part); 64 leaves room for JSON schemas in tools. 2^20
// values is more token ids than any served context holds.
inline constexpr size_t kMaxJsonDepth = 64;
inline constexpr size_t kMaxJsonValues = size_t{1} << 20;

// response_format json_object / json_schema (openai_response_format.h).
struct ResponseFormat {
  enum class Kind { kJsonObject, kJsonSchema };
  Kind kind = Kind::kJsonObject;
  std::string name;    // json_schema.name
  std::string schema;  // json_schema.schema as JSON text, key order kept
  bool strict = false;
};

// vLLM's structured_outputs regex / choice / grammar (openai_guided.h).
struct GuidedSpec {
  enum class Kind { kRegex, kChoice, kGrammar };
  Kind kind = Kind::kRegex;
  std::string text;   // the regex, the choices as a JSON array, the GBNF
  std::string param;  // where it came from: "structured_outputs.regex", "guided_regex", ...
};

// Function tools (openai_tools.h has the rules).
struct ToolDef {
  std::string name;         // 1..64 of [A-Za-z0-9_-]
  std::string description;  // may be empty
  std::string parameters;   // JSON Schema text; "{}" when absent
  bool strict = false;      // function.strict: every keyword must be enforced
};

struct ToolChoice {
  enum class Kind { kNone, kAuto, kRequired, kNamed };
  Kind kind = Kind::kAuto;
  std::string name;  // kNamed
};

struct ToolsRequest {
  std::vector<ToolDef> tools;
  ToolChoice choice;
  bool parallel = true;
  // tools as the chat template sees them (OpenAI's request shape).
  nlohmann::ordered_json template_tools;
};

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
  // stream_options.include_usage. stream_options is only allowed with
  // "stream": true (a 400 otherwise, as OpenAI answers).
  bool include_usage = false;
  // stream_options.continuous_usage_stats (vLLM): with include_usage, every
  // chunk carries the usage so far. Always false unless include_usage.
  bool continuous_usage = false;
  int n = 1;  // [1, kMaxN]
  // max_tokens, or for chat max_completion_tokens (if both are given they
  // must agree). >= 1. Unset = the server's default (OpenAI's default for
  // /v1/completions is 16; for chat, the rest of the context).
  std::optional<int> max_tokens;
  std::vector<std::string> stop;  // up to kMaxStop non-empty strings

  // temperature [0, 2], top_p (0, 1], seed (int64, stored as its uint64 bit
  // pattern), frequency_penalty and presence_penalty [-2, 2]; logit_bias
  // ({"<token id>": bias in [-100, 100]}, at most kMaxLogitBiasEntries, one
  // entry per id, sorted by id; ids are checked against the vocabulary by
  // the server); extensions top_k (>= 0; -1 = off as in vLLM, stored as 0),
  // min_p [0, 1], repetition_penalty (0, 10]. Always passes
  // SamplingParams::Validate().
  SamplingParams sampling;
  bool ignore_eos = false;  // extension (vLLM / llama.cpp name)
  // vLLM extensions (GenerationRequest has their meaning): min_tokens
  // (>= 0, at most max_tokens when that is given), stop_token_ids (ids >= 0,
  // at most kMaxStopTokenIds; checked against the vocabulary by the server),
  // include_stop_str_in_output, skip_special_tokens.
  int min_tokens = 0;
  std::vector<int32_t> stop_token_ids;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  // Extension "speculative": false opts this request out of speculative
  // decoding (when the server has it on; the output distribution is the same).
  bool speculative = true;
  std::string user;
  std::optional<Priority> priority;  // extension: "priority": "interactive" | "batch"
  std::optional<double> timeout_s;   // extension: "timeout": seconds, finite, > 0
  // Structured output; unset = text. Chat (OpenAI) and completions (extension).
  std::optional<ResponseFormat> response_format;
  // vLLM's structured_outputs / guided_* regex, choice or grammar; their
  // json / json_object forms fill response_format instead.
  std::optional<GuidedSpec> guided;
  // Logprobs: -1 = none; else each generated token's logprob and this many
  // alternatives. Chat: "logprobs": true with "top_logprobs" 0..20 (default
  // 0; top_logprobs > 0 without logprobs is a 400); completions: the integer
  // "logprobs" 0..5.
  int logprobs = -1;
  // Completions: the prompt text comes back before the completion (with
  // logprobs, the prompt tokens' records too). "suffix" is a 400: no
  // template here has an infill format.
  bool echo = false;
  // Chat: tools, tool_choice and parallel_tool_calls (openai_tools.h);
  // unset without tools.
  std::optional<ToolsRequest> tools;
  // Chat: vLLM's chat_template_kwargs, extra variables for the chat template
  // (Qwen3's enable_thinking, ...): an object, or null when absent (see
  // fields::ParseChatTemplateKwargs for its bounds).
  nlohmann::ordered_json chat_template_kwargs;

  // With ParseOptions::ignore_unknown_fields: the unknown keys that were
  // skipped, each once, in body order, named with array indices dropped
  // ("messages.reasoning_content"), each cut to 64 bytes.
  std::vector<std::string> ignored_fields;
};

struct ParseOptions {
  // false (OpenAI): an unknown key is a 400 unknown_parameter. true: it is
  // skipped and listed in ApiRequest::ignored_fields (for clients written
  // for vLLM or llama-server that send their own extensions).
  bool ignore_unknown_fields = false;
  // The model of a request without "model" ("" = it is a 400, as OpenAI);
  // the server passes the one it serves, as vLLM and llama-server do.
  std::string default_model{};
};

// The exact error to send (http/openai_error.h writes it).
using ApiError = http::OpenAiError;

// The parsed request, or the exact error to send.
std::variant<ApiRequest, ApiError> ParseRequest(Endpoint endpoint, std::string_view body,
                                                const ParseOptions& options = {});

// "interactive" | "batch", ASCII case-insensitive (the X-Priority header and
// the "priority" field); anything else is InvalidArgument.
Expected<Priority> ParsePriority(std::string_view s);

}  // namespace brisk::api
