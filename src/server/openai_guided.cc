#include "server/openai_guided.h"

#include <fmt/format.h>

#include <string_view>

namespace brisk::api::fields {
namespace {

enum class Key { kRegex, kChoice, kGrammar, kJson, kJsonObject };

struct Found {
  std::string param;
  Key key;
  const Json* value;
};

constexpr std::pair<std::string_view, Key> kStructuredKeys[] = {
    {"regex", Key::kRegex}, {"choice", Key::kChoice},          {"grammar", Key::kGrammar},
    {"json", Key::kJson},   {"json_object", Key::kJsonObject},
};
constexpr std::pair<const char*, Key> kGuidedFields[] = {
    {"guided_regex", Key::kRegex},
    {"guided_choice", Key::kChoice},
    {"guided_grammar", Key::kGrammar},
    {"guided_json", Key::kJson},
};

Problem ReadSchema(const Json& v, const std::string& param, ResponseFormat* rf) {
  rf->kind = ResponseFormat::Kind::kJsonSchema;
  rf->name = "structured_outputs";
  if (v.is_object() || v.is_boolean()) {
    rf->schema = v.dump();
    return std::nullopt;
  }
  if (!v.is_string()) return TypeError(param, "an object (a JSON Schema) or its JSON text", v);
  const Json parsed = Json::parse(v.get_ref<const std::string&>(), nullptr, false);
  if (!parsed.is_object() && !parsed.is_boolean())
    return Bad(
        param, "invalid_value",
        fmt::format("'{}' must be a JSON Schema: an object, or a string holding one", param));
  rf->schema = parsed.dump();
  return std::nullopt;
}

Problem ReadChoices(const Json& v, const std::string& param, std::string* out) {
  if (!v.is_array()) return TypeError(param, "an array of strings", v);
  if (v.empty() || v.size() > kMaxGuidedChoices)
    return Bad(
        param, "invalid_value",
        fmt::format("'{}' must hold 1 to {} strings, got {}", param, kMaxGuidedChoices, v.size()));
  for (size_t i = 0; i < v.size(); ++i)
    if (!v[i].is_string()) return TypeError(fmt::format("{}[{}]", param, i), "a string", v[i]);
  *out = v.dump();
  return std::nullopt;
}

}  // namespace

Problem ParseGuided(const Json& body, ApiRequest* req, std::vector<std::string>* ignored) {
  std::vector<Found> found;
  if (const Json* so = Get(body, "structured_outputs")) {
    if (!so->is_object()) return TypeError("structured_outputs", "an object", *so);
    for (const auto& [k, val] : so->items()) {
      if (val.is_null()) continue;
      const std::string p = "structured_outputs." + k;
      bool known = false;
      for (const auto& [name, key] : kStructuredKeys) {
        if (k == name) {
          found.push_back({p, key, &val});
          known = true;
        }
      }
      if (!known) BRISK_API_TRY(UnknownKey(p, ignored));
    }
  }
  for (const auto& [name, key] : kGuidedFields)
    if (const Json* v = Get(body, name)) found.push_back({name, key, v});
  if (found.empty()) return std::nullopt;
  const Found& f = found[0];
  if (found.size() > 1)
    return Bad(found[1].param, "invalid_value",
               fmt::format("Only one structured output constraint per request: got '{}' and '{}'",
                           f.param, found[1].param));
  if (req->response_format)
    return Bad(
        f.param, "invalid_value",
        fmt::format("'{}' cannot be combined with 'response_format': send one of them", f.param));
  if (req->tools && req->tools->choice.kind != ToolChoice::Kind::kNone)
    return Bad(f.param, "invalid_value",
               fmt::format("'{}' cannot be combined with 'tools' (the tool calls have their own "
                           "grammar); send tool_choice 'none' or drop one of them",
                           f.param));
  GuidedSpec g;
  g.param = f.param;
  switch (f.key) {
    case Key::kJsonObject: {
      bool on = false;
      BRISK_API_TRY(ReadBool(*f.value, f.param, &on));
      if (on) req->response_format = ResponseFormat{};  // json_object
      return std::nullopt;
    }
    case Key::kJson: {
      ResponseFormat rf;
      BRISK_API_TRY(ReadSchema(*f.value, f.param, &rf));
      req->response_format = std::move(rf);
      return std::nullopt;
    }
    case Key::kChoice:
      g.kind = GuidedSpec::Kind::kChoice;
      BRISK_API_TRY(ReadChoices(*f.value, f.param, &g.text));
      break;
    case Key::kRegex:
    case Key::kGrammar:
      g.kind = f.key == Key::kRegex ? GuidedSpec::Kind::kRegex : GuidedSpec::Kind::kGrammar;
      BRISK_API_TRY(ReadString(*f.value, f.param, &g.text));
      if (f.key == Key::kGrammar && g.text.empty())
        return Bad(f.param, "invalid_value", fmt::format("'{}' must not be empty", f.param));
      break;
  }
  req->guided = std::move(g);
  return std::nullopt;
}

}  // namespace brisk::api::fields
