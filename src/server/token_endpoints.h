// POST /tokenize and POST /detokenize in vLLM's shapes, so that clients can
// budget the context before they generate. Pure functions over the body and
// the preparation context (model id, prompt renderer, engine facts); the
// OpenAI server routes to them behind the same header gate and API keys as
// /v1/chat/completions.
//
// /tokenize, one of:
//   {"model"?, "prompt": "text", "add_special_tokens"?: true,
//    "return_token_strs"?: false}
//     -> the ids /v1/completions would feed the model for that prompt
//        (special-token strings parsed, BOS as the model asks; with
//        add_special_tokens false, no BOS/EOS added);
//   {"model"?, "messages": [...], "add_generation_prompt"?: true,
//    "add_special_tokens"?: (as the chat endpoint), "return_token_strs"?}
//     -> the ids /v1/chat/completions would feed the model (the chat
//        template, message text never becomes control tokens); messages are
//        checked as that endpoint checks them.
//   Answer: {"count": N, "max_model_len": M, "tokens": [...],
//            "token_strs": null | ["piece", ...]} where max_model_len is the
//   context limit (prompt + completion) and token_strs the text of each
//   token (control tokens rendered, invalid UTF-8 replaced by U+FFFD).
// /detokenize: {"model"?, "tokens": [id, ...]} -> {"prompt": "text"}, the
//   ids decoded with special tokens rendered, invalid UTF-8 replaced. Every
//   id must be in the tokenizer's vocabulary.
// Errors are ApiErrors in the OpenAI shape: 400 for a bad body (as the
// generation endpoints: unknown keys per server.unknown_request_fields), 404
// for a model this server does not serve. Bodies are bounded by the HTTP
// body limit and the JSON limits of openai_request.h.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/openai_api.h"
#include "server/request_preparation.h"

namespace brisk {

struct TokenEndpointAnswer {
  std::string body;  // JSON
  // Unknown keys skipped under server.unknown_request_fields: ignore.
  std::vector<std::string> ignored_fields;
};

std::variant<TokenEndpointAnswer, api::ApiError> Tokenize(const PreparationContext& ctx,
                                                          std::string_view body);
std::variant<TokenEndpointAnswer, api::ApiError> Detokenize(const PreparationContext& ctx,
                                                            std::string_view body);

}  // namespace brisk
