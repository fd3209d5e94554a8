// What an OpenAI-compatible server's answer says, read on the client side
// (the gateway's upstreams, the golden-set runner, calibration): token counts,
// the first choice's text, logprobs and finish reason, an error. Pure
// functions over JSON; also GET /v1/models for the served model.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "util/status.h"

namespace brisk::http {

struct TokenCounts {
  int64_t prompt = 0;  // all prompt tokens, cached ones included (OpenAI's prompt_tokens)
  int64_t cached = 0;  // of which served from the prefix cache (<= prompt)
  int64_t output = 0;  // completion tokens

  TokenCounts& operator+=(const TokenCounts& o) {
    prompt += o.prompt;
    cached += o.cached;
    output += o.output;
    return *this;
  }
};

// What a response said about its tokens and ending, as far as it got.
struct AnswerFacts {
  TokenCounts tokens;          // from the last usage seen
  bool usage_seen = false;     // any usage seen at all
  int64_t content_chunks = 0;  // chunks that carried generated text or a tool call
  std::string finish_reason;   // of choice 0 ("" until seen)
  std::string text;            // choice 0's text/content, for judges (capped at 1 MiB)
  double logprob_sum = 0;      // choice 0's token logprobs, when the answer has them
  int64_t logprob_count = 0;
  std::optional<nlohmann::json> error;  // an error event or body
};

// Reads usage, finish reason, text and logprobs of a whole (non-stream) answer
// of /v1/chat/completions or /v1/completions.
AnswerFacts ReadAnswer(const nlohmann::json& body);
// Accumulates one stream chunk's facts (choices[0].delta / .text, usage).
void ReadChunk(const nlohmann::json& chunk, AnswerFacts* facts);

// The first model object of GET /v1/models at `url` (with any extension
// fields, e.g. brisk serve's "brisk").
Expected<nlohmann::json> ModelInfo(const std::string& url, const std::string& api_key);
// The first model id of GET /v1/models at `url`.
Expected<std::string> DiscoverModel(const std::string& url, const std::string& api_key);

}  // namespace brisk::http
