// Request fields beyond the basic sampling ones, parsed as openai_request.h
// describes: OpenAI's logit_bias and the vLLM extensions people rely on
// (min_tokens, stop_token_ids, include_stop_str_in_output,
// skip_special_tokens). Internal to server/ (used by openai_request.cc).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "server/openai_fields.h"
#include "server/openai_request.h"

namespace brisk::api::fields {

// "logit_bias": an object {"<token id>": bias}. Keys are decimal token ids
// (digits only, at most INT32_MAX; "007" is 7), values numbers in
// [-100, 100]; two keys naming the same id are an error. `out` is sorted by
// id. The entry count is capped while the JSON is parsed.
Problem ParseLogitBias(const Json& v, std::vector<std::pair<int32_t, float>>* out);

// min_tokens, stop_token_ids, include_stop_str_in_output and
// skip_special_tokens from `body` into `req`. Call after max_tokens is set:
// min_tokens may not exceed it.
Problem ParseVllmExtensions(const Json& body, ApiRequest* req);

// vLLM's "chat_template_kwargs": an object whose keys become chat template
// variables. Keys are identifiers ([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes),
// not the variables the server sets (messages, tools, documents,
// add_generation_prompt, bos_token, eos_token); values any JSON; at most
// kMaxChatTemplateKwargsBytes serialized. null is the same as absent.
inline constexpr size_t kMaxChatTemplateKwargsBytes = 16 * 1024;
Problem ParseChatTemplateKwargs(const Json& v, Json* out);

}  // namespace brisk::api::fields
