#include "server/openai_prompt.h"

#include <fmt/format.h>

#include <limits>

namespace brisk::api::fields {
namespace {

// ---- Chat messages.

bool IsRole(std::string_view r) {
  return r == "system" || r == "user" || r == "assistant" || r == "developer" || r == "tool";
}

// Content: a string, or a non-empty array of {type: "text", text} parts
// joined with "\n". Other part types are known but unsupported.
Problem ParseContent(const Json& v, const std::string& param, std::string* out,
                     std::vector<std::string>* ignored) {
  if (v.is_string()) {
    *out = v.get_ref<const std::string&>();
    return std::nullopt;
  }
  if (!v.is_array()) return TypeError(param, "a string or an array of content parts", v);
  if (v.empty()) {
    return Bad(param, "empty_array", fmt::format("'{}' must not be an empty array", param));
  }
  out->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", param, i);
    const Json& part = v[i];
    if (!part.is_object()) return TypeError(p, "an object", part);
    const Json* type = Get(part, "type");
    if (!type) return Missing(p + ".type");
    if (!type->is_string()) return TypeError(p + ".type", "a string", *type);
    const std::string& t = type->get_ref<const std::string&>();
    if (t == "image_url" || t == "input_audio" || t == "file" || t == "refusal") {
      return Unsupported(p + ".type", fmt::format("'{}' content parts are not supported yet; "
                                                  "only 'text' parts are",
                                                  t));
    }
    if (t != "text") {
      return Bad(p + ".type", "invalid_value",
                 fmt::format("'{}.type' must be one of text, image_url, input_audio, file, "
                             "refusal, got '{}'",
                             p, Snippet(t)));
    }
    for (const auto& [k, val] : part.items()) {
      if (k != "type" && k != "text" && !val.is_null())
        BRISK_API_TRY(UnknownKey(p + "." + k, ignored));
    }
    const Json* text = Get(part, "text");
    if (!text) return Missing(p + ".text");
    if (!text->is_string()) return TypeError(p + ".text", "a string", *text);
    if (i > 0) out->push_back('\n');
    out->append(text->get_ref<const std::string&>());
  }
  return std::nullopt;
}

// null, [] or {}: the "off" value of a list- or object-valued field.
bool IsEmptyValue(const Json& v) {
  return v.is_null() || ((v.is_array() || v.is_object()) && v.empty());
}

// An assistant message's tool_calls (history of an agent loop): each
// {id, type: "function", function: {name, arguments (a string)}}, kept in
// that shape for the chat template.
Problem ParseToolCalls(const Json& v, const std::string& p, Json* msg) {
  if (!v.is_array()) return TypeError(p, "an array", v);
  if (v.empty()) return std::nullopt;
  Json calls = Json::array();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string q = fmt::format("{}[{}]", p, i);
    const Json& c = v[i];
    if (!c.is_object()) return TypeError(q, "an object", c);
    std::string id, name, args;
    if (const Json* x = Get(c, "id")) BRISK_API_TRY(ReadString(*x, q + ".id", &id));
    const Json* fn = Get(c, "function");
    if (!fn) return Missing(q + ".function");
    if (!fn->is_object()) return TypeError(q + ".function", "an object", *fn);
    const Json* n = Get(*fn, "name");
    if (!n) return Missing(q + ".function.name");
    BRISK_API_TRY(ReadString(*n, q + ".function.name", &name));
    if (const Json* a = Get(*fn, "arguments"))
      BRISK_API_TRY(ReadString(*a, q + ".function.arguments", &args));
    calls.push_back(Json{
        {"id", id}, {"type", "function"}, {"function", Json{{"name", name}, {"arguments", args}}}});
  }
  (*msg)["tool_calls"] = std::move(calls);
  return std::nullopt;
}

Problem ParseMessage(const Json& m, size_t index, Json* out, std::vector<std::string>* ignored) {
  const std::string p = fmt::format("messages[{}]", index);
  if (!m.is_object()) return TypeError(p, "an object", m);
  const Json* role_v = Get(m, "role");
  if (!role_v) return Missing(p + ".role");
  if (!role_v->is_string()) return TypeError(p + ".role", "a string", *role_v);
  const std::string& role = role_v->get_ref<const std::string&>();
  if (!IsRole(role)) {
    return Bad(p + ".role", "invalid_value",
               fmt::format("'{}.role' must be one of system, user, assistant, developer, tool, "
                           "got '{}'",
                           p, Snippet(role)));
  }
  const bool assistant = role == "assistant";
  for (const auto& [k, val] : m.items()) {
    if (k == "role" || k == "content" || k == "name") continue;
    if (k == "tool_call_id" && role == "tool") continue;
    if (assistant && k == "tool_calls") continue;  // ParseToolCalls
    if (assistant && (k == "function_call" || k == "refusal" || k == "audio")) {
      if (IsEmptyValue(val)) continue;
      return Unsupported(p + "." + k,
                         fmt::format("'{}' in assistant messages is not supported yet", k));
    }
    if (val.is_null()) continue;
    BRISK_API_TRY(UnknownKey(p + "." + k, ignored));
  }

  Json msg = Json::object();
  msg["role"] = role;
  std::string content;
  if (const Json* c = Get(m, "content")) {
    BRISK_API_TRY(ParseContent(*c, p + ".content", &content, ignored));
  } else if (!assistant) {
    return Missing(p + ".content");
  }
  msg["content"] = std::move(content);
  if (const Json* name = Get(m, "name")) {
    std::string s;
    BRISK_API_TRY(ReadString(*name, p + ".name", &s));
    msg["name"] = std::move(s);
  }
  if (const Json* id = Get(m, "tool_call_id")) {
    std::string s;
    BRISK_API_TRY(ReadString(*id, p + ".tool_call_id", &s));
    msg["tool_call_id"] = std::move(s);
  }
  if (const Json* calls = assistant ? Get(m, "tool_calls") : nullptr)
    BRISK_API_TRY(ParseToolCalls(*calls, p + ".tool_calls", &msg));
  *out = std::move(msg);
  return std::nullopt;
}

}  // namespace

Problem ParseMessages(const Json& v, Json* out, std::vector<std::string>* ignored) {
  if (!v.is_array()) return TypeError("messages", "an array", v);
  if (v.empty()) {
    return Bad("messages", "empty_array", "'messages' must be a non-empty array");
  }
  *out = Json::array();
  for (size_t i = 0; i < v.size(); ++i) {
    Json msg;
    BRISK_API_TRY(ParseMessage(v[i], i, &msg, ignored));
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

namespace {

// ---- Completions prompt.

Problem ReadTokenIds(const Json& v, const std::string& param, std::vector<int32_t>* out) {
  if (v.empty()) {
    return Bad(param, "empty_array", fmt::format("'{}' must not be an empty array", param));
  }
  out->clear();
  out->reserve(v.size());
  constexpr int64_t kMaxId = std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& e = v[i];
    // Fast path for the usual case; the element's name is only built for
    // the slow path (up to kMaxJsonValues ids).
    if (e.is_number_unsigned() && e.get<uint64_t>() <= static_cast<uint64_t>(kMaxId)) {
      out->push_back(static_cast<int32_t>(e.get<uint64_t>()));
      continue;
    }
    int64_t id = 0;
    BRISK_API_TRY(ReadIntIn(e, fmt::format("{}[{}]", param, i), 0, kMaxId, &id));
    out->push_back(static_cast<int32_t>(id));
  }
  return std::nullopt;
}

}  // namespace

Problem ParsePrompt(const Json& v, ApiRequest* req) {
  constexpr std::string_view kExpected =
      "a string, an array of strings, an array of token ids or an array of token id arrays";
  // An empty prompt leaves nothing to continue from (no BOS for most models).
  auto add_string = [&](const Json& s, const std::string& param) -> Problem {
    if (s.get_ref<const std::string&>().empty()) {
      return Bad(param, "invalid_value", fmt::format("'{}' must not be an empty string", param));
    }
    req->prompts.push_back(s.get_ref<const std::string&>());
    return std::nullopt;
  };
  if (v.is_string()) return add_string(v, "prompt");
  if (!v.is_array()) return TypeError("prompt", kExpected, v);
  if (v.empty()) return Bad("prompt", "empty_array", "'prompt' must not be an empty array");
  const Json& first = v[0];
  if (first.is_number()) {
    req->prompt_tokens.emplace_back();
    return ReadTokenIds(v, "prompt", &req->prompt_tokens.back());
  }
  if (!first.is_string() && !first.is_array()) return TypeError("prompt[0]", kExpected, first);
  // An array of prompts: every element has the first one's type.
  const bool strings = first.is_string();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = fmt::format("prompt[{}]", i);
    if (strings) {
      if (!v[i].is_string()) return TypeError(p, "a string, like prompt[0]", v[i]);
      BRISK_API_TRY(add_string(v[i], p));
    } else {
      if (!v[i].is_array()) return TypeError(p, "an array of token ids, like prompt[0]", v[i]);
      req->prompt_tokens.emplace_back();
      BRISK_API_TRY(ReadTokenIds(v[i], p, &req->prompt_tokens.back()));
    }
  }
  return std::nullopt;
}

}  // namespace brisk::api::fields
