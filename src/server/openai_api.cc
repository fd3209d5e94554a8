#include "server/openai_api.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <random>

#include "model/tokenizer_utf8.h"

namespace brisk::api {
namespace {

using Json = nlohmann::ordered_json;
// An error to send, or nothing: the internal currency of the parser.
using Problem = std::optional<ApiError>;

#define BRISK_API_TRY(expr)             \
  do {                                  \
    if (Problem _p = (expr)) return _p; \
  } while (0)

constexpr int kIntMax = std::numeric_limits<int>::max();
// "timeout" upper bound: a week. Keeps seconds -> chrono conversions far from overflow.
constexpr double kMaxTimeoutS = 7 * 24 * 3600.0;

ApiError Bad(std::string param, std::string code, std::string message) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

// At most `max` bytes of `s`, cut on a code point boundary, for messages that
// quote client text.
std::string Snippet(std::string_view s, size_t max = 64) {
  if (s.size() <= max) return std::string(s);
  size_t cut = max;
  while (cut > 0 && (static_cast<uint8_t>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

// What a value is, for "got ..." in messages: numbers as written, anything
// else by JSON type name (a string's contents are not echoed).
std::string Describe(const Json& v) { return v.is_number() ? v.dump() : v.type_name(); }

ApiError TypeError(const std::string& param, std::string_view expected, const Json& got) {
  return Bad(param, "invalid_type",
             fmt::format("'{}' must be {}, got {}", param, expected, Describe(got)));
}

ApiError Unsupported(const std::string& param, std::string message) {
  return Bad(param, "unsupported", std::move(message));
}

ApiError Missing(const std::string& param) {
  return Bad(param, "missing_required_parameter",
             fmt::format("Missing required parameter: '{}'", param));
}

// The name is client text of any length: it is cut in both param and message.
ApiError Unknown(const std::string& param) {
  std::string name = Snippet(param);
  std::string message = fmt::format("Unrecognized request argument supplied: {}", name);
  return Bad(std::move(name), "unknown_parameter", std::move(message));
}

// The value of `key`, or nullptr when it is absent or null.
const Json* Get(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// ---- Typed readers. Each checks the type, then the range, and names the field.

Problem ReadBool(const Json& v, const std::string& param, bool* out) {
  if (!v.is_boolean()) return TypeError(param, "a boolean", v);
  *out = v.get<bool>();
  return std::nullopt;
}

Problem ReadString(const Json& v, const std::string& param, std::string* out) {
  if (!v.is_string()) return TypeError(param, "a string", v);
  *out = v.get_ref<const std::string&>();
  return std::nullopt;
}

// Any JSON number (integer or float), finite.
Problem ReadNumber(const Json& v, const std::string& param, double* out) {
  if (!v.is_number()) return TypeError(param, "a number", v);
  *out = v.get<double>();
  if (!std::isfinite(*out)) return TypeError(param, "a finite number", v);
  return std::nullopt;
}

// lo_open / hi_open make the bound exclusive: "(0, 1]".
Problem ReadNumberIn(const Json& v, const std::string& param, double lo, double hi, bool lo_open,
                     bool hi_open, double* out) {
  BRISK_API_TRY(ReadNumber(v, param, out));
  const bool ok = (lo_open ? *out > lo : *out >= lo) && (hi_open ? *out < hi : *out <= hi);
  if (!ok) {
    return Bad(param, "invalid_value",
               fmt::format("'{}' must be in {}{}, {}{}, got {}", param, lo_open ? "(" : "[", lo, hi,
                           hi_open ? ")" : "]", Describe(v)));
  }
  return std::nullopt;
}

// An integer; floats with an integral value (16.0) count, booleans do not.
Problem ReadInt64(const Json& v, const std::string& param, int64_t* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Bad(param, "invalid_value",
                 fmt::format("'{}' must fit in a signed 64-bit integer, got {}", param, u));
    }
    *out = static_cast<int64_t>(u);
    return std::nullopt;
  }
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return std::nullopt;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) return TypeError(param, "an integer", v);
    // [-2^63, 2^63): both bounds are exact doubles.
    if (d < -0x1p63 || d >= 0x1p63) {
      return Bad(
          param, "invalid_value",
          fmt::format("'{}' must fit in a signed 64-bit integer, got {}", param, Describe(v)));
    }
    *out = static_cast<int64_t>(d);
    return std::nullopt;
  }
  return TypeError(param, "an integer", v);
}

Problem ReadIntIn(const Json& v, const std::string& param, int64_t lo, int64_t hi, int64_t* out) {
  BRISK_API_TRY(ReadInt64(v, param, out));
  if (*out < lo || *out > hi) {
    std::string range =
        hi == kIntMax ? fmt::format(">= {}", lo) : fmt::format("in [{}, {}]", lo, hi);
    if (hi == kIntMax && *out > hi) range = fmt::format("<= {}", hi);
    return Bad(param, "invalid_value", fmt::format("'{}' must be {}, got {}", param, range, *out));
  }
  return std::nullopt;
}

// ---- Which top-level fields each endpoint knows.

enum FieldUse : uint8_t { kChat = 1, kCompl = 2, kBoth = 3 };
struct KnownField {
  const char* name;
  uint8_t use;
};
constexpr KnownField kKnownFields[] = {
    {"model", kBoth},
    {"messages", kChat},
    {"prompt", kCompl},
    {"stream", kBoth},
    {"stream_options", kBoth},
    {"n", kBoth},
    {"max_tokens", kBoth},
    {"max_completion_tokens", kChat},
    {"stop", kBoth},
    {"temperature", kBoth},
    {"top_p", kBoth},
    {"seed", kBoth},
    {"frequency_penalty", kBoth},
    {"presence_penalty", kBoth},
    // Extensions (vLLM / llama.cpp names).
    {"top_k", kBoth},
    {"min_p", kBoth},
    {"repetition_penalty", kBoth},
    {"ignore_eos", kBoth},
    {"priority", kBoth},
    {"timeout", kBoth},
    // Harmless: accepted, type-checked, no effect.
    {"user", kBoth},
    {"metadata", kBoth},
    {"store", kBoth},
    {"service_tier", kBoth},
    {"prompt_cache_key", kBoth},
    {"safety_identifier", kBoth},
    {"parallel_tool_calls", kChat},
    // Known but unsupported unless given their "off" value.
    {"logprobs", kBoth},
    {"top_logprobs", kChat},
    {"logit_bias", kBoth},
    {"tools", kChat},
    {"tool_choice", kChat},
    {"functions", kChat},
    {"function_call", kChat},
    {"response_format", kChat},
    {"audio", kChat},
    {"modalities", kChat},
    {"prediction", kChat},
    {"reasoning_effort", kChat},
    {"verbosity", kChat},
    {"web_search_options", kChat},
    {"echo", kCompl},
    {"suffix", kCompl},
    {"best_of", kCompl},
};

bool IsKnown(std::string_view key, Endpoint ep) {
  const uint8_t want = ep == Endpoint::kChatCompletions ? kChat : kCompl;
  for (const KnownField& f : kKnownFields) {
    if ((f.use & want) && key == f.name) return true;
  }
  return false;
}

// ---- Request body validity before JSON parsing.

Problem CheckUtf8Body(std::string_view body) {
  size_t i = 0;
  while (i < body.size()) {
    if (static_cast<uint8_t>(body[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    if (CheckUtf8(body.substr(i), &len) != Utf8Check::kValid) {
      return Bad("", "invalid_encoding",
                 fmt::format("Request body is not valid UTF-8 (byte offset {})", i));
    }
    i += len;
  }
  return std::nullopt;
}

// A SAX handler that only records why and where parsing failed, so a
// malformed body is reported with its byte offset without exceptions.
class ParseErrorCapture : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // nlohmann counts bytes read (1-based); report the 0-based offset of the
    // byte where parsing stopped.
    position_ = position > 0 ? position - 1 : 0;
    // Drop the "[json.exception.parse_error.101] " prefix.
    std::string_view what = ex.what();
    if (size_t p = what.find("] "); p != std::string_view::npos) what.remove_prefix(p + 2);
    reason_ = Snippet(what, 200);
    return false;
  }

  size_t position() const { return position_; }
  const std::string& reason() const { return reason_; }

 private:
  size_t position_ = 0;
  std::string reason_ = "syntax error";
};

ApiError JsonError(std::string_view body) {
  ParseErrorCapture capture;
  (void)Json::sax_parse(body.begin(), body.end(), &capture);
  return Bad(
      "", "invalid_json",
      fmt::format("Invalid JSON body at byte offset {}: {}", capture.position(), capture.reason()));
}

// ---- Chat messages.

bool IsRole(std::string_view r) {
  return r == "system" || r == "user" || r == "assistant" || r == "developer" || r == "tool";
}

// Content: a string, or a non-empty array of {type: "text", text} parts
// joined with "\n". Other part types are known but unsupported.
Problem ParseContent(const Json& v, const std::string& param, std::string* out) {
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
      if (k != "type" && k != "text" && !val.is_null()) return Unknown(p + "." + k);
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

Problem ParseMessage(const Json& m, size_t index, Json* out) {
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
    if (assistant &&
        (k == "tool_calls" || k == "function_call" || k == "refusal" || k == "audio")) {
      if (IsEmptyValue(val)) continue;
      return Unsupported(p + "." + k,
                         fmt::format("'{}' in assistant messages is not supported yet", k));
    }
    if (val.is_null()) continue;
    return Unknown(p + "." + k);
  }

  Json msg = Json::object();
  msg["role"] = role;
  std::string content;
  if (const Json* c = Get(m, "content")) {
    BRISK_API_TRY(ParseContent(*c, p + ".content", &content));
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
  *out = std::move(msg);
  return std::nullopt;
}

Problem ParseMessages(const Json& v, Json* out) {
  if (!v.is_array()) return TypeError("messages", "an array", v);
  if (v.empty()) {
    return Bad("messages", "empty_array", "'messages' must be a non-empty array");
  }
  *out = Json::array();
  for (size_t i = 0; i < v.size(); ++i) {
    Json msg;
    BRISK_API_TRY(ParseMessage(v[i], i, &msg));
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

// ---- Completions prompt.

Problem ReadTokenIds(const Json& v, const std::string& param, std::vector<int32_t>* out) {
  if (v.empty()) {
    return Bad(param, "empty_array", fmt::format("'{}' must not be an empty array", param));
  }
  out->clear();
  out->reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t id = 0;
    BRISK_API_TRY(ReadIntIn(v[i], fmt::format("{}[{}]", param, i), 0,
                            std::numeric_limits<int32_t>::max(), &id));
    out->push_back(static_cast<int32_t>(id));
  }
  return std::nullopt;
}

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

// ---- Other structured fields.

Problem ParseStop(const Json& v, std::vector<std::string>* out) {
  auto add = [&](const Json& s, const std::string& param) -> Problem {
    if (!s.is_string()) return TypeError(param, "a string", s);
    if (s.get_ref<const std::string&>().empty()) {
      return Bad(param, "invalid_value", fmt::format("'{}' must not be an empty string", param));
    }
    out->push_back(s.get_ref<const std::string&>());
    return std::nullopt;
  };
  if (v.is_string()) return add(v, "stop");
  if (!v.is_array()) return TypeError("stop", "a string or an array of strings", v);
  if (v.size() > kMaxStop) {
    return Bad("stop", "invalid_value",
               fmt::format("'stop' must have at most {} strings, got {}", kMaxStop, v.size()));
  }
  for (size_t i = 0; i < v.size(); ++i) BRISK_API_TRY(add(v[i], fmt::format("stop[{}]", i)));
  return std::nullopt;
}

Problem ParseStreamOptions(const Json& v, bool* include_usage) {
  if (!v.is_object()) return TypeError("stream_options", "an object", v);
  for (const auto& [k, val] : v.items()) {
    if (val.is_null()) continue;
    const std::string p = "stream_options." + k;
    bool b = false;
    if (k == "include_usage") {
      BRISK_API_TRY(ReadBool(val, p, include_usage));
    } else if (k == "include_obfuscation") {
      BRISK_API_TRY(ReadBool(val, p, &b));  // padding against side channels; nothing to do
    } else {
      return Unknown(p);
    }
  }
  return std::nullopt;
}

// "none" | "auto" (with no tools, both mean "no calls") are accepted.
Problem ParseToolChoice(const Json& v, const std::string& param) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "none" || s == "auto") return std::nullopt;
    if (s == "required") return Unsupported(param, "tool calling is not supported yet");
    return Bad(
        param, "invalid_value",
        fmt::format("'{}' must be one of none, auto, required, got '{}'", param, Snippet(s)));
  }
  if (v.is_object()) return Unsupported(param, "tool calling is not supported yet");
  return TypeError(param, "a string or an object", v);
}

// Fields that are known but not implemented: accepted only at their "off"
// value. Type errors come before "unsupported" so a typo still reads as one.
Problem CheckUnsupported(const Json& body, Endpoint ep) {
  const bool chat = ep == Endpoint::kChatCompletions;
  if (const Json* v = Get(body, "logprobs")) {
    if (chat) {
      bool b = false;
      BRISK_API_TRY(ReadBool(*v, "logprobs", &b));
      if (b) return Unsupported("logprobs", "'logprobs' is not supported yet");
    } else {
      int64_t k = 0;
      BRISK_API_TRY(ReadIntIn(*v, "logprobs", 0, 5, &k));
      return Unsupported("logprobs", "'logprobs' is not supported yet");
    }
  }
  if (const Json* v = Get(body, "top_logprobs")) {
    int64_t k = 0;
    BRISK_API_TRY(ReadIntIn(*v, "top_logprobs", 0, kMaxTopLogprobs, &k));
    if (k > 0) return Unsupported("top_logprobs", "'top_logprobs' is not supported yet");
  }
  if (const Json* v = Get(body, "logit_bias")) {
    if (!v->is_object()) return TypeError("logit_bias", "an object", *v);
    if (!v->empty()) return Unsupported("logit_bias", "'logit_bias' is not supported yet");
  }
  for (const char* key : {"tools", "functions"}) {
    if (const Json* v = Get(body, key)) {
      if (!v->is_array()) return TypeError(key, "an array", *v);
      if (!v->empty()) {
        return Unsupported(key, fmt::format("'{}' (function calling) is not supported yet", key));
      }
    }
  }
  for (const char* key : {"tool_choice", "function_call"}) {
    if (const Json* v = Get(body, key)) BRISK_API_TRY(ParseToolChoice(*v, key));
  }
  if (const Json* v = Get(body, "parallel_tool_calls")) {
    bool b = false;
    BRISK_API_TRY(ReadBool(*v, "parallel_tool_calls", &b));
    if (b) {
      return Unsupported("parallel_tool_calls",
                         "'parallel_tool_calls': true is not supported yet (no tool calling)");
    }
  }
  if (const Json* v = Get(body, "response_format")) {
    if (!v->is_object()) return TypeError("response_format", "an object", *v);
    const Json* type = Get(*v, "type");
    if (!type) return Missing("response_format.type");
    if (!type->is_string()) return TypeError("response_format.type", "a string", *type);
    const std::string& t = type->get_ref<const std::string&>();
    if (t == "json_object" || t == "json_schema") {
      return Unsupported("response_format",
                         fmt::format("'response_format' of type '{}' is not supported yet; only "
                                     "'text' is",
                                     t));
    }
    if (t != "text") {
      return Bad("response_format.type", "invalid_value",
                 fmt::format("'response_format.type' must be one of text, json_object, "
                             "json_schema, got '{}'",
                             Snippet(t)));
    }
  }
  if (const Json* v = Get(body, "modalities")) {
    if (!v->is_array()) return TypeError("modalities", "an array of strings", *v);
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& m = (*v)[i];
      const std::string p = fmt::format("modalities[{}]", i);
      if (!m.is_string()) return TypeError(p, "a string", m);
      if (m.get_ref<const std::string&>() != "text") {
        return Unsupported(p, fmt::format("output modality '{}' is not supported yet; only "
                                          "'text' is",
                                          Snippet(m.get_ref<const std::string&>())));
      }
    }
  }
  for (const char* key :
       {"audio", "prediction", "reasoning_effort", "verbosity", "web_search_options"}) {
    if (Get(body, key)) return Unsupported(key, fmt::format("'{}' is not supported yet", key));
  }
  if (const Json* v = Get(body, "echo")) {
    bool b = false;
    BRISK_API_TRY(ReadBool(*v, "echo", &b));
    if (b) return Unsupported("echo", "'echo': true is not supported yet");
  }
  if (const Json* v = Get(body, "suffix")) {
    std::string s;
    BRISK_API_TRY(ReadString(*v, "suffix", &s));
    if (!s.empty()) return Unsupported("suffix", "'suffix' (insertion) is not supported yet");
  }
  if (const Json* v = Get(body, "best_of")) {
    int64_t k = 0;
    BRISK_API_TRY(ReadIntIn(*v, "best_of", 1, kMaxN, &k));
    if (k > 1) return Unsupported("best_of", "'best_of' > 1 is not supported yet");
  }
  return std::nullopt;
}

// Accepted and ignored; only their types are checked.
Problem CheckHarmless(const Json& body) {
  std::string s;
  bool b = false;
  for (const char* key : {"service_tier", "prompt_cache_key", "safety_identifier"}) {
    if (const Json* v = Get(body, key)) BRISK_API_TRY(ReadString(*v, key, &s));
  }
  if (const Json* v = Get(body, "store")) BRISK_API_TRY(ReadBool(*v, "store", &b));
  if (const Json* v = Get(body, "metadata")) {
    if (!v->is_object()) return TypeError("metadata", "an object", *v);
  }
  return std::nullopt;
}

Problem ParseSampling(const Json& body, SamplingParams* s) {
  double d = 0;
  if (const Json* v = Get(body, "temperature")) {
    BRISK_API_TRY(ReadNumberIn(*v, "temperature", 0, 2, false, false, &d));
    s->temperature = static_cast<float>(d);
  }
  if (const Json* v = Get(body, "top_p")) {
    BRISK_API_TRY(ReadNumberIn(*v, "top_p", 0, 1, true, false, &d));
    s->top_p = static_cast<float>(d);
  }
  if (const Json* v = Get(body, "frequency_penalty")) {
    BRISK_API_TRY(ReadNumberIn(*v, "frequency_penalty", -2, 2, false, false, &d));
    s->frequency_penalty = static_cast<float>(d);
  }
  if (const Json* v = Get(body, "presence_penalty")) {
    BRISK_API_TRY(ReadNumberIn(*v, "presence_penalty", -2, 2, false, false, &d));
    s->presence_penalty = static_cast<float>(d);
  }
  if (const Json* v = Get(body, "min_p")) {
    BRISK_API_TRY(ReadNumberIn(*v, "min_p", 0, 1, false, false, &d));
    s->min_p = static_cast<float>(d);
  }
  if (const Json* v = Get(body, "repetition_penalty")) {
    BRISK_API_TRY(ReadNumberIn(*v, "repetition_penalty", 0, 10, true, false, &d));
    s->repetition_penalty = static_cast<float>(d);
  }
  if (const Json* v = Get(body, "top_k")) {
    int64_t k = 0;
    BRISK_API_TRY(ReadIntIn(*v, "top_k", -1, kIntMax, &k));
    s->top_k = k < 0 ? 0 : static_cast<int>(k);  // -1 = off, as in vLLM
  }
  if (const Json* v = Get(body, "seed")) {
    int64_t seed = 0;
    BRISK_API_TRY(ReadInt64(*v, "seed", &seed));
    s->seed = static_cast<uint64_t>(seed);
  }
  // The double-range checks above should imply this; a float rounding
  // (top_p = 1e-50 -> 0.0f) is still reported as a client error.
  if (Status st = s->Validate(); !st.ok()) return Bad("", "invalid_value", st.message());
  return std::nullopt;
}

Problem ParseInto(Endpoint ep, std::string_view body_text, ApiRequest* req) {
  BRISK_API_TRY(CheckUtf8Body(body_text));
  Json body = Json::parse(body_text.begin(), body_text.end(), nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return JsonError(body_text);
  if (!body.is_object()) {
    return Bad("", "invalid_type",
               fmt::format("Request body must be a JSON object, got {}", body.type_name()));
  }
  for (const auto& [k, v] : body.items()) {
    if (!IsKnown(k, ep)) return Unknown(k);
  }
  const bool chat = ep == Endpoint::kChatCompletions;
  req->endpoint = ep;

  const Json* model = Get(body, "model");
  if (!model) return Missing("model");
  BRISK_API_TRY(ReadString(*model, "model", &req->model));
  if (req->model.empty()) return Bad("model", "invalid_value", "'model' must not be empty");

  if (chat) {
    const Json* messages = Get(body, "messages");
    if (!messages) return Missing("messages");
    BRISK_API_TRY(ParseMessages(*messages, &req->messages));
  } else {
    const Json* prompt = Get(body, "prompt");
    if (!prompt) return Missing("prompt");
    BRISK_API_TRY(ParsePrompt(*prompt, req));
  }

  BRISK_API_TRY(CheckUnsupported(body, ep));
  BRISK_API_TRY(CheckHarmless(body));

  if (const Json* v = Get(body, "stream")) BRISK_API_TRY(ReadBool(*v, "stream", &req->stream));
  if (const Json* v = Get(body, "stream_options")) {
    BRISK_API_TRY(ParseStreamOptions(*v, &req->include_usage));
  }
  req->include_usage = req->include_usage && req->stream;

  int64_t i = 0;
  if (const Json* v = Get(body, "n")) {
    BRISK_API_TRY(ReadIntIn(*v, "n", 1, kMaxN, &i));
    req->n = static_cast<int>(i);
  }
  if (const Json* v = Get(body, "max_tokens")) {
    BRISK_API_TRY(ReadIntIn(*v, "max_tokens", 1, kIntMax, &i));
    req->max_tokens = static_cast<int>(i);
  }
  if (const Json* v = chat ? Get(body, "max_completion_tokens") : nullptr) {
    BRISK_API_TRY(ReadIntIn(*v, "max_completion_tokens", 1, kIntMax, &i));
    if (req->max_tokens && *req->max_tokens != i) {
      return Bad("max_completion_tokens", "invalid_value",
                 fmt::format("'max_tokens' ({}) and 'max_completion_tokens' ({}) disagree; set "
                             "only 'max_completion_tokens'",
                             *req->max_tokens, i));
    }
    req->max_tokens = static_cast<int>(i);
  }
  if (const Json* v = Get(body, "stop")) BRISK_API_TRY(ParseStop(*v, &req->stop));

  BRISK_API_TRY(ParseSampling(body, &req->sampling));

  if (const Json* v = Get(body, "ignore_eos")) {
    BRISK_API_TRY(ReadBool(*v, "ignore_eos", &req->ignore_eos));
  }
  if (const Json* v = Get(body, "user")) BRISK_API_TRY(ReadString(*v, "user", &req->user));
  if (const Json* v = Get(body, "priority")) {
    if (!v->is_string()) return TypeError("priority", "a string", *v);
    Expected<Priority> p = ParsePriority(v->get_ref<const std::string&>());
    if (!p.ok()) return Bad("priority", "invalid_value", p.status().message());
    req->priority = *p;
  }
  if (const Json* v = Get(body, "timeout")) {
    double t = 0;
    BRISK_API_TRY(ReadNumberIn(*v, "timeout", 0, kMaxTimeoutS, true, false, &t));
    req->timeout_s = t;
  }
  return std::nullopt;
}

// ---- Responses.

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json OrNull(std::string_view s) { return s.empty() ? Json(nullptr) : Json(std::string(s)); }

Json UsageJson(const Usage& u) {
  Json j = Json::object();
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["prompt_tokens_details"] = Json{{"cached_tokens", u.cached_tokens}};
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

std::variant<ApiRequest, ApiError> ParseRequest(Endpoint endpoint, std::string_view body) {
  ApiRequest req;
  if (Problem p = ParseInto(endpoint, body, &req)) return std::move(*p);
  return req;
}

Expected<Priority> ParsePriority(std::string_view s) {
  auto iequals = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      char c = a[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != b[i]) return false;
    }
    return true;
  };
  if (iequals(s, "interactive")) return Priority::kInteractive;
  if (iequals(s, "batch")) return Priority::kBatch;
  return InvalidArgument("priority must be one of interactive, batch, got '{}'", Snippet(s));
}

std::string ErrorBody(const ApiError& e) {
  Json err = Json::object();
  err["message"] = e.message;
  err["type"] = e.type;
  err["param"] = OrNull(e.param);
  err["code"] = OrNull(e.code);
  return Dump(Json{{"error", std::move(err)}});
}

std::string ModelsBody(const std::vector<std::string>& model_ids, int64_t created_unix) {
  Json data = Json::array();
  for (const std::string& id : model_ids) {
    data.push_back(
        Json{{"id", id}, {"object", "model"}, {"created", created_unix}, {"owned_by", "brisk"}});
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
      choice["message"] = Json{{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
    } else {
      choice["text"] = c.text;
      choice["index"] = c.index;
    }
    choice["logprobs"] = nullptr;
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
                     std::optional<std::string_view> finish_reason) {
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
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason ? Json(std::string(*finish_reason)) : Json(nullptr);
  j["choices"] = Json::array({std::move(choice)});
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

std::string SseError(const ApiError& e) { return "data: " + ErrorBody(e) + "\n\n"; }

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
