#include "server/openai_request.h"

#include <fmt/format.h>

#include <limits>

#include "server/openai_extensions.h"
#include "server/openai_fields.h"
#include "server/openai_guided.h"
#include "server/openai_prompt.h"
#include "server/openai_response_format.h"
#include "server/openai_tools.h"
#include "server/strict_json.h"
#include "util/utf8.h"

namespace brisk::api {
namespace {

using namespace fields;

// "timeout" upper bound: a week. Keeps seconds -> chrono conversions far from overflow.
constexpr double kMaxTimeoutS = 7 * 24 * 3600.0;

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
    {"logit_bias", kBoth},
    // Extensions (vLLM / llama.cpp names).
    {"top_k", kBoth},
    {"min_p", kBoth},
    {"repetition_penalty", kBoth},
    {"ignore_eos", kBoth},
    {"min_tokens", kBoth},
    {"stop_token_ids", kBoth},
    {"include_stop_str_in_output", kBoth},
    {"skip_special_tokens", kBoth},
    {"speculative", kBoth},  // extension: false opts out of speculative decoding
    {"priority", kBoth},
    {"timeout", kBoth},
    {"structured_outputs", kBoth},  // vLLM (openai_guided.h)
    {"guided_regex", kBoth},
    {"guided_choice", kBoth},
    {"guided_grammar", kBoth},
    {"guided_json", kBoth},
    // Harmless: accepted, type-checked, no effect.
    {"user", kBoth},
    {"metadata", kBoth},
    {"store", kBoth},
    {"service_tier", kBoth},
    {"prompt_cache_key", kBoth},
    {"safety_identifier", kBoth},
    {"parallel_tool_calls", kChat},
    {"chat_template_kwargs", kChat},  // vLLM: extra chat template variables
    // Known but unsupported unless given their "off" value.
    {"logprobs", kBoth},
    {"top_logprobs", kChat},
    {"tools", kChat},
    {"tool_choice", kChat},
    {"functions", kChat},
    {"function_call", kChat},
    {"response_format", kBoth},
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

// ---- The JSON document.

// Objects whose size OpenAI bounds; every other object gets kMaxObjectMembers.
constexpr JsonMemberCap kMemberCaps[] = {
    {"metadata", kMaxMetadataEntries},
    {"logit_bias", kMaxLogitBiasEntries},
};
constexpr JsonLimits kJsonLimits{.max_depth = kMaxJsonDepth,
                                 .max_values = kMaxJsonValues,
                                 .max_object_members = kMaxObjectMembers,
                                 .member_caps = kMemberCaps};

ApiError JsonProblem(const JsonParseError& e) {
  using Kind = JsonParseError::Kind;
  const std::string where = e.path.empty() ? "the request body" : fmt::format("'{}'", e.path);
  switch (e.kind) {
    case Kind::kDuplicateKey:
      return Bad(
          e.path.empty() ? e.key : e.path + "." + e.key, "duplicate_key",
          fmt::format("Duplicate key '{}' in {}: each key may appear only once", e.key, where));
    case Kind::kTooManyMembers:
      return Bad(e.path, "invalid_value",
                 fmt::format("{} must have at most {} entries",
                             e.path.empty() ? "The request body" : where, e.limit));
    case Kind::kTooDeep:
      return Bad(e.path, "json_too_complex",
                 fmt::format("JSON nested deeper than {} levels at {}", e.limit, where));
    case Kind::kTooManyValues:
      return Bad("", "json_too_complex",
                 fmt::format("Request body has more than {} JSON values", e.limit));
    case Kind::kSyntax: break;
  }
  return Bad("", "invalid_json",
             fmt::format("Invalid JSON body at byte offset {}: {}", e.offset,
                         e.reason.empty() ? "syntax error" : e.reason));
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

Problem ParseStreamOptions(const Json& v, ApiRequest* req, std::vector<std::string>* ignored) {
  if (!v.is_object()) return TypeError("stream_options", "an object", v);
  for (const auto& [k, val] : v.items()) {
    if (val.is_null()) continue;
    const std::string p = "stream_options." + k;
    bool b = false;
    if (k == "include_usage") {
      BRISK_API_TRY(ReadBool(val, p, &req->include_usage));
    } else if (k == "continuous_usage_stats") {
      BRISK_API_TRY(ReadBool(val, p, &req->continuous_usage));  // vLLM
    } else if (k == "include_obfuscation") {
      BRISK_API_TRY(ReadBool(val, p, &b));  // padding against side channels; nothing to do
    } else {
      BRISK_API_TRY(UnknownKey(p, ignored));
    }
  }
  return std::nullopt;
}

constexpr const char* kUseTools =
    "'function_call' (deprecated) is not supported; use 'tools' and 'tool_choice'";

// function_call (deprecated): "none" | "auto" (no functions: no calls) are accepted.
Problem ParseToolChoice(const Json& v, const std::string& param) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "none" || s == "auto") return std::nullopt;
    if (s == "required") return Unsupported(param, kUseTools);
    return Bad(
        param, "invalid_value",
        fmt::format("'{}' must be one of none, auto, required, got '{}'", param, Snippet(s)));
  }
  if (v.is_object()) return Unsupported(param, kUseTools);
  return TypeError(param, "a string or an object", v);
}

// Fields that are known but not implemented: accepted only at their "off"
// value. Type errors come before "unsupported" so a typo still reads as one.
Problem CheckUnsupported(const Json& body) {
  if (const Json* v = Get(body, "functions")) {
    if (!v->is_array()) return TypeError("functions", "an array", *v);
    if (!v->empty())
      return Unsupported("functions", "'functions' (deprecated) is not supported; use 'tools'");
  }
  if (const Json* v = Get(body, "function_call"))
    BRISK_API_TRY(ParseToolChoice(*v, "function_call"));
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
  if (const Json* v = Get(body, "best_of")) {
    int64_t k = 0;
    BRISK_API_TRY(ReadIntIn(*v, "best_of", 1, kMaxN, &k));
    if (k > 1) return Unsupported("best_of", "'best_of' > 1 is not supported yet");
  }
  return std::nullopt;
}

// Chat: logprobs (bool) + top_logprobs (0..20); completions: logprobs
// (0..5), echo, suffix.
Problem ParseLogprobsAndEcho(const Json& body, Endpoint ep, ApiRequest* req) {
  if (ep == Endpoint::kChatCompletions) {
    bool on = false;
    int64_t top = 0;
    if (const Json* v = Get(body, "logprobs")) BRISK_API_TRY(ReadBool(*v, "logprobs", &on));
    if (const Json* v = Get(body, "top_logprobs")) {
      BRISK_API_TRY(ReadIntIn(*v, "top_logprobs", 0, kMaxTopLogprobs, &top));
      if (top > 0 && !on)
        return Bad("top_logprobs", "invalid_value",
                   "'top_logprobs' requires 'logprobs' to be true");
    }
    if (on) req->logprobs = static_cast<int>(top);
    return std::nullopt;
  }
  if (const Json* v = Get(body, "logprobs")) {
    int64_t k = 0;
    BRISK_API_TRY(ReadIntIn(*v, "logprobs", 0, kMaxCompletionLogprobs, &k));
    req->logprobs = static_cast<int>(k);
  }
  if (const Json* v = Get(body, "echo")) BRISK_API_TRY(ReadBool(*v, "echo", &req->echo));
  if (const Json* v = Get(body, "suffix")) {
    std::string s;
    BRISK_API_TRY(ReadString(*v, "suffix", &s));
    if (!s.empty())
      return Unsupported("suffix",
                         "'suffix' (insertion) is not supported: this model's template has no "
                         "infill (fill-in-the-middle) format");
  }
  return std::nullopt;
}

// OpenAI's metadata: string values; its entry count is capped while parsing.
Problem CheckMetadata(const Json& v) {
  if (!v.is_object()) return TypeError("metadata", "an object of strings", v);
  for (const auto& [k, val] : v.items()) {
    const std::string p = "metadata." + Snippet(k);
    if (CountCodePoints(k) > kMaxMetadataKeyChars) {
      return Bad(p, "invalid_value",
                 fmt::format("'metadata' keys must be at most {} characters, got {} in '{}'",
                             kMaxMetadataKeyChars, CountCodePoints(k), Snippet(k)));
    }
    if (!val.is_string()) return TypeError(p, "a string", val);
    const size_t chars = CountCodePoints(val.get_ref<const std::string&>());
    if (chars > kMaxMetadataValueChars) {
      return Bad(p, "invalid_value",
                 fmt::format("'{}' must be at most {} characters, got {}", p,
                             kMaxMetadataValueChars, chars));
    }
  }
  return std::nullopt;
}

// Accepted and ignored; only their types and sizes are checked.
Problem CheckHarmless(const Json& body) {
  std::string s;
  bool b = false;
  for (const char* key : {"service_tier", "prompt_cache_key", "safety_identifier"}) {
    if (const Json* v = Get(body, key)) BRISK_API_TRY(ReadString(*v, key, &s));
  }
  if (const Json* v = Get(body, "store")) BRISK_API_TRY(ReadBool(*v, "store", &b));
  if (const Json* v = Get(body, "metadata")) BRISK_API_TRY(CheckMetadata(*v));
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
  if (const Json* v = Get(body, "logit_bias")) BRISK_API_TRY(ParseLogitBias(*v, &s->logit_bias));
  // The double-range checks above should imply this; a float rounding
  // (top_p = 1e-50 -> 0.0f) is still reported as a client error.
  if (Status st = s->Validate(); !st.ok()) return Bad("", "invalid_value", st.message());
  return std::nullopt;
}

Problem ParseInto(Endpoint ep, std::string_view body_text, const ParseOptions& options,
                  ApiRequest* req) {
  Json body;
  BRISK_API_TRY(ParseBodyObject(body_text, &body));
  std::vector<std::string>* ignored =
      options.ignore_unknown_fields ? &req->ignored_fields : nullptr;
  for (const auto& [k, v] : body.items()) {
    if (!IsKnown(k, ep)) BRISK_API_TRY(UnknownKey(k, ignored));
  }
  const bool chat = ep == Endpoint::kChatCompletions;
  req->endpoint = ep;

  const Json* model = Get(body, "model");
  if (!model && options.default_model.empty()) return Missing("model");
  if (model) {
    BRISK_API_TRY(ReadString(*model, "model", &req->model));
  } else {
    req->model = options.default_model;
  }
  if (req->model.empty()) return Bad("model", "invalid_value", "'model' must not be empty");

  if (chat) {
    const Json* messages = Get(body, "messages");
    if (!messages) return Missing("messages");
    BRISK_API_TRY(ParseMessages(*messages, &req->messages, ignored));
  } else {
    const Json* prompt = Get(body, "prompt");
    if (!prompt) return Missing("prompt");
    BRISK_API_TRY(ParsePrompt(*prompt, req));
  }

  BRISK_API_TRY(CheckUnsupported(body));
  BRISK_API_TRY(ParseLogprobsAndEcho(body, ep, req));
  if (chat) BRISK_API_TRY(ParseTools(body, &req->tools));
  if (const Json* v = chat ? Get(body, "chat_template_kwargs") : nullptr) {
    BRISK_API_TRY(ParseChatTemplateKwargs(*v, &req->chat_template_kwargs));
  }
  BRISK_API_TRY(CheckHarmless(body));
  BRISK_API_TRY(ParseResponseFormat(body, req, ignored));
  BRISK_API_TRY(ParseGuided(body, req, ignored));

  if (const Json* v = Get(body, "stream")) BRISK_API_TRY(ReadBool(*v, "stream", &req->stream));
  if (const Json* v = Get(body, "stream_options")) {
    BRISK_API_TRY(ParseStreamOptions(*v, req, ignored));
    if (!req->stream) {
      return Bad("stream_options", "invalid_value",
                 "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
    }
  }
  req->continuous_usage = req->continuous_usage && req->include_usage;

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
  BRISK_API_TRY(ParseVllmExtensions(body, req));

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

}  // namespace

namespace fields {

Problem ParseBodyObject(std::string_view body_text, Json* out) {
  BRISK_API_TRY(CheckUtf8Body(body_text));
  auto parsed = ParseStrictJson(body_text, kJsonLimits);
  if (auto* e = std::get_if<JsonParseError>(&parsed)) return JsonProblem(*e);
  *out = std::get<Json>(std::move(parsed));
  if (!out->is_object()) {
    return Bad("", "invalid_type",
               fmt::format("Request body must be a JSON object, got {}", out->type_name()));
  }
  return std::nullopt;
}

}  // namespace fields

std::variant<ApiRequest, ApiError> ParseRequest(Endpoint endpoint, std::string_view body,
                                                const ParseOptions& options) {
  ApiRequest req;
  if (Problem p = ParseInto(endpoint, body, options, &req)) return std::move(*p);
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

}  // namespace brisk::api
