// Logprob records (engine/logprobs.h, plain numbers from the engine) as
// OpenAI's JSON, made on the request's strand with the model's tokenizer:
//
//   chat:        {"content": [{"token", "logprob", "bytes", "top_logprobs":
//                 [{"token", "logprob", "bytes"}]}], "refusal": null}
//   completions: {"tokens": [...], "token_logprobs": [...], "top_logprobs":
//                 [{token: logprob}, ...], "text_offset": [...]}
//
// "token" is the token's text (a partial UTF-8 character comes out with
// U+FFFD when the body is written; "bytes" has the exact bytes). -inf (a
// token the model gives no mass) is sent as -9999.0, as OpenAI and vLLM do.
// Completions' top_logprobs dicts hold the k alternatives plus the chosen
// token (vLLM's shape); an echoed prompt's first token has null entries.
// text_offset counts characters (code points) from the start of the
// choice's text, echoed prompt included.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "engine/logprobs.h"
#include "model/tokenizer.h"

namespace brisk::api {

inline constexpr float kLogprobFloor = -9999.0f;

// Chat: the records for "logprobs.content".
nlohmann::ordered_json ChatLogprobContent(std::span<const TokenLogprob> records,
                                          const Tokenizer& tokenizer, bool render_special);
// {"content": content, "refusal": null}
nlohmann::ordered_json ChatLogprobs(nlohmann::ordered_json content);

// Completions: appends records to `out` (an object with the four arrays,
// created when null); `*text_offset` is where the next token's text starts
// and moves past each token. `first_null`: the first record is an echoed
// prompt's first token, with no logprob.
void AppendCompletionLogprobs(std::span<const TokenLogprob> records, const Tokenizer& tokenizer,
                              bool render_special, bool first_null, int64_t* text_offset,
                              nlohmann::ordered_json* out);

}  // namespace brisk::api
