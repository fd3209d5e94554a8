#include "server/openai_extensions.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace brisk::api::fields {
namespace {

constexpr int64_t kMaxTokenId = std::numeric_limits<int32_t>::max();

// A decimal token id: 1 to 10 ASCII digits, at most INT32_MAX. Leading zeros
// are allowed (the value is what counts).
bool ParseTokenIdKey(std::string_view key, int32_t* out) {
  if (key.empty()) return false;
  int64_t v = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
    if (v > kMaxTokenId) return false;
  }
  *out = static_cast<int32_t>(v);
  return true;
}

}  // namespace

Problem ParseLogitBias(const Json& v, std::vector<std::pair<int32_t, float>>* out) {
  if (!v.is_object()) return TypeError("logit_bias", "an object of token id -> bias", v);
  out->clear();
  out->reserve(v.size());
  for (const auto& [key, val] : v.items()) {
    const std::string p = "logit_bias." + Snippet(key);
    int32_t id = 0;
    if (!ParseTokenIdKey(key, &id)) {
      return Bad(p, "invalid_value",
                 fmt::format("'logit_bias' keys must be token ids (decimal integers from 0 to "
                             "{}), got '{}'",
                             kMaxTokenId, Snippet(key)));
    }
    double bias = 0;
    BRISK_API_TRY(ReadNumberIn(val, p, -100, 100, false, false, &bias));
    out->emplace_back(id, static_cast<float>(bias));
  }
  std::sort(out->begin(), out->end());
  for (size_t i = 1; i < out->size(); ++i) {
    if ((*out)[i].first == (*out)[i - 1].first) {
      return Bad("logit_bias", "invalid_value",
                 fmt::format("'logit_bias' names token id {} twice", (*out)[i].first));
    }
  }
  return std::nullopt;
}

Problem ParseVllmExtensions(const Json& body, ApiRequest* req) {
  if (const Json* v = Get(body, "min_tokens")) {
    int64_t k = 0;
    BRISK_API_TRY(ReadIntIn(*v, "min_tokens", 0, kIntMax, &k));
    if (req->max_tokens && k > *req->max_tokens) {
      return Bad(
          "min_tokens", "invalid_value",
          fmt::format("'min_tokens' ({}) must be at most 'max_tokens' ({})", k, *req->max_tokens));
    }
    req->min_tokens = static_cast<int>(k);
  }
  if (const Json* v = Get(body, "stop_token_ids")) {
    if (!v->is_array()) return TypeError("stop_token_ids", "an array of token ids", *v);
    if (v->size() > kMaxStopTokenIds) {
      return Bad("stop_token_ids", "invalid_value",
                 fmt::format("'stop_token_ids' must have at most {} ids, got {}", kMaxStopTokenIds,
                             v->size()));
    }
    req->stop_token_ids.clear();
    for (size_t i = 0; i < v->size(); ++i) {
      int64_t id = 0;
      BRISK_API_TRY(ReadIntIn((*v)[i], fmt::format("stop_token_ids[{}]", i), 0, kMaxTokenId, &id));
      req->stop_token_ids.push_back(static_cast<int32_t>(id));
    }
  }
  if (const Json* v = Get(body, "include_stop_str_in_output")) {
    BRISK_API_TRY(ReadBool(*v, "include_stop_str_in_output", &req->include_stop_str_in_output));
  }
  if (const Json* v = Get(body, "skip_special_tokens")) {
    BRISK_API_TRY(ReadBool(*v, "skip_special_tokens", &req->skip_special_tokens));
  }
  if (const Json* v = Get(body, "speculative")) {
    BRISK_API_TRY(ReadBool(*v, "speculative", &req->speculative));
  }
  return std::nullopt;
}

Problem ParseChatTemplateKwargs(const Json& v, Json* out) {
  *out = nullptr;
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return TypeError("chat_template_kwargs", "an object", v);
  static constexpr std::string_view kServerSets[] = {
      "messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token"};
  for (const auto& [key, val] : v.items()) {
    const bool identifier = !key.empty() && key.size() <= 64 && !(key[0] >= '0' && key[0] <= '9') &&
                            std::all_of(key.begin(), key.end(), [](char c) {
                              return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                     (c >= '0' && c <= '9') || c == '_';
                            });
    if (!identifier) {
      return Bad("chat_template_kwargs", "invalid_value",
                 fmt::format("'chat_template_kwargs' keys must be template variable names "
                             "([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes), got '{}'",
                             Snippet(key)));
    }
    if (std::find(std::begin(kServerSets), std::end(kServerSets), key) != std::end(kServerSets)) {
      return Bad("chat_template_kwargs." + key, "invalid_value",
                 fmt::format("'chat_template_kwargs.{}' is set by the server and cannot be "
                             "overridden",
                             key));
    }
  }
  const size_t bytes = v.dump().size();
  if (bytes > kMaxChatTemplateKwargsBytes) {
    return Bad("chat_template_kwargs", "invalid_value",
               fmt::format("'chat_template_kwargs' is {} bytes as JSON; at most {} are accepted",
                           bytes, kMaxChatTemplateKwargsBytes));
  }
  *out = v;
  return std::nullopt;
}

}  // namespace brisk::api::fields
