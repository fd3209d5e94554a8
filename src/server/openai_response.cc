#include "server/openai_response.h"

#include <nlohmann/json.hpp>
#include <random>

namespace brisk::api {
namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json OrNull(std::string_view s) { return s.empty() ? Json(nullptr) : Json(std::string(s)); }

Json UsageJson(const Usage& u) {
  Json j = Json::object();
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["prompt_tokens_details"] = Json{{"cached_tokens", u.cached_tokens}};
  if (u.accepted_draft_tokens > 0) j["speculative_accepted_tokens"] = u.accepted_draft_tokens;
  return j;
}

constexpr std::string_view kSystemFingerprint = "brisk";

// The fields every response object starts with, in OpenAI's order.
Json Envelope(std::string_view id, std::string_view object, std::string_view model,
              int64_t created) {
  Json j = Json::object();
  j["id"] = std::string(id);
  j["object"] = std::string(object);
  j["created"] = created;
  j["model"] = std::string(model);
  return j;
}

std::string SseEvent(const Json& j) { return "data: " + Dump(j) + "\n\n"; }

}  // namespace

std::string ModelsBody(const std::vector<std::string>& model_ids, int64_t created_unix,
                       const Json& brisk_info) {
  Json data = Json::array();
  for (const std::string& id : model_ids) {
    data.push_back(
        Json{{"id", id}, {"object", "model"}, {"created", created_unix}, {"owned_by", "brisk"}});
    if (!brisk_info.is_null()) data.back()["brisk"] = brisk_info;
  }
  return Dump(Json{{"object", "list"}, {"data", std::move(data)}});
}

std::string CompletionBody(Endpoint ep, std::string_view id, std::string_view model,
                           int64_t created, const std::vector<Choice>& choices, const Usage& u) {
  const bool chat = ep == Endpoint::kChatCompletions;
  Json j = Envelope(id, chat ? "chat.completion" : "text_completion", model, created);
  Json arr = Json::array();
  for (const Choice& c : choices) {
    Json choice = Json::object();
    if (chat) {
      choice["index"] = c.index;
      if (c.tool_calls.is_null()) {
        choice["message"] = Json{{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
      } else {
        // "auto": text the model wrote before its call is content.
        choice["message"] = Json{{"role", "assistant"},
                                 {"content", c.text.empty() ? Json(nullptr) : Json(c.text)},
                                 {"refusal", nullptr},
                                 {"tool_calls", c.tool_calls}};
      }
      if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
    } else {
      choice["text"] = c.text;
      choice["index"] = c.index;
    }
    choice["logprobs"] = c.logprobs;
    choice["finish_reason"] = OrNull(c.finish_reason);
    arr.push_back(std::move(choice));
  }
  j["choices"] = std::move(arr);
  j["usage"] = UsageJson(u);
  j["system_fingerprint"] = std::string(kSystemFingerprint);
  return Dump(j);
}

std::string SseChunk(Endpoint ep, std::string_view id, std::string_view model, int64_t created,
                     int index, std::optional<std::string_view> role, std::string_view delta_text,
                     std::optional<std::string_view> finish_reason, const Usage* usage,
                     const Json* logprobs) {
  const bool chat = ep == Endpoint::kChatCompletions;
  Json j = Envelope(id, chat ? "chat.completion.chunk" : "text_completion", model, created);
  j["system_fingerprint"] = std::string(kSystemFingerprint);
  Json choice = Json::object();
  if (chat) {
    choice["index"] = index;
    Json delta = Json::object();
    if (role) delta["role"] = std::string(*role);
    if (role || !delta_text.empty()) delta["content"] = std::string(delta_text);
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = std::string(delta_text);
    choice["index"] = index;
  }
  choice["logprobs"] = logprobs ? *logprobs : Json(nullptr);
  choice["finish_reason"] = finish_reason ? Json(std::string(*finish_reason)) : Json(nullptr);
  j["choices"] = Json::array({std::move(choice)});
  if (usage) j["usage"] = UsageJson(*usage);
  return SseEvent(j);
}

std::string SseDeltaChunk(std::string_view id, std::string_view model, int64_t created, int index,
                          Json delta, std::optional<std::string_view> finish_reason,
                          const Usage* usage, const Json* logprobs) {
  Json j = Envelope(id, "chat.completion.chunk", model, created);
  j["system_fingerprint"] = std::string(kSystemFingerprint);
  Json choice = Json::object();
  choice["index"] = index;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = logprobs ? *logprobs : Json(nullptr);
  choice["finish_reason"] = finish_reason ? Json(std::string(*finish_reason)) : Json(nullptr);
  j["choices"] = Json::array({std::move(choice)});
  if (usage) j["usage"] = UsageJson(*usage);
  return SseEvent(j);
}

std::string SseUsageChunk(Endpoint ep, std::string_view id, std::string_view model, int64_t created,
                          const Usage& u) {
  const bool chat = ep == Endpoint::kChatCompletions;
  Json j = Envelope(id, chat ? "chat.completion.chunk" : "text_completion", model, created);
  j["system_fingerprint"] = std::string(kSystemFingerprint);
  j["choices"] = Json::array();
  j["usage"] = UsageJson(u);
  return SseEvent(j);
}

std::string NewRequestId(Endpoint ep) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  std::string id(ep == Endpoint::kChatCompletions ? "chatcmpl-" : "cmpl-");
  for (int i = 0; i < 24; ++i) id.push_back(kAlnum[rng() % (sizeof(kAlnum) - 1)]);
  return id;
}

}  // namespace brisk::api
