#include "grammar/answer_check.h"

// valijson reports a schema it cannot use by throwing, not by abort().
#define VALIJSON_USE_EXCEPTIONS 1

#include <fmt/format.h>

#include <exception>
#include <set>
#include <utility>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>
#include <vector>

#include "grammar/schema_compiler.h"

namespace brisk {

using Json = nlohmann::json;

struct AnswerCheck::Compiled {
  Json document;  // what `schema` was parsed from
  valijson::Schema schema;
};

namespace {

// Deepest nesting of arrays and objects in JSON text (strings skipped); stops
// counting once past `limit`.
int MaxDepth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// Removes "pattern" and "patternProperties" wherever they are keywords (not
// property names), going through every keyword that holds subschemas. The
// schema compiler has bounded the nesting already.
void DropRegexKeywords(Json* s) {
  if (!s->is_object()) return;
  s->erase("pattern");
  s->erase("patternProperties");
  for (const char* k : {"properties", "$defs", "definitions", "dependentSchemas", "dependencies"}) {
    if (auto it = s->find(k); it != s->end() && it->is_object()) {
      for (Json& v : *it) DropRegexKeywords(&v);
    }
  }
  for (const char* k : {"additionalProperties", "items", "additionalItems", "contains", "not", "if",
                        "then", "else", "propertyNames", "unevaluatedItems",
                        "unevaluatedProperties", "allOf", "anyOf", "oneOf", "prefixItems"}) {
    auto it = s->find(k);
    if (it == s->end()) continue;
    if (it->is_array()) {
      for (Json& v : *it) DropRegexKeywords(&v);
    } else {
      DropRegexKeywords(&*it);
    }
  }
}

// The JSON pointer a local "$ref" names ("#/a/b~1c" -> /a/b~1c), or nullopt.
std::optional<Json::json_pointer> LocalPointer(const Json& ref) {
  if (!ref.is_string()) return std::nullopt;
  const std::string& r = ref.get_ref<const std::string&>();
  if (r.empty() || r[0] != '#') return std::nullopt;
  try {
    return Json::json_pointer(r.substr(1));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Why valijson may not see this schema's references, or "": every "$ref"
// must be a local "#..." pointer (valijson resolves anything else, e.g. the
// relative "object", against the same document and can loop on it), no
// "$id" may move their base, and no chain of references may lead only back
// to itself (valijson recurses on those until the stack runs out).
std::string UnsafeRefs(const Json& root) {
  std::vector<const Json*> stack = {&root};
  while (!stack.empty()) {
    const Json* node = stack.back();
    stack.pop_back();
    if (node->is_object() && node->contains("$id")) return "a $id in the schema";
    if (node->is_object() && node->contains("$ref")) {
      if (!LocalPointer(node->at("$ref"))) return "a $ref that is not a local '#' pointer";
      std::set<const Json*> seen = {node};
      const Json* at = node;
      while (at->is_object() && at->contains("$ref")) {
        auto ptr = LocalPointer(at->at("$ref"));
        if (!ptr || !root.contains(*ptr)) break;
        at = &root.at(*ptr);
        if (!seen.insert(at).second) return "a $ref chain leads back to itself";
      }
    }
    if (node->is_structured()) {
      for (const Json& child : *node) stack.push_back(&child);
    }
  }
  return "";
}

}  // namespace

AnswerCheck::AnswerCheck() = default;
AnswerCheck::~AnswerCheck() = default;
AnswerCheck::AnswerCheck(AnswerCheck&&) noexcept = default;
AnswerCheck& AnswerCheck::operator=(AnswerCheck&&) noexcept = default;

AnswerCheck AnswerCheck::FromRequest(const Json& body) {
  AnswerCheck c;
  auto rf = body.find("response_format");
  if (rf == body.end() || !rf->is_object()) return c;
  auto type = rf->find("type");
  if (type == rf->end() || !type->is_string()) return c;
  if (*type == "json_object") {
    c.active_ = true;
    return c;
  }
  if (*type != "json_schema") return c;
  c.active_ = true;
  auto js = rf->find("json_schema");
  if (js == rf->end() || !js->is_object() || !js->contains("schema")) {
    c.skipped_ = "no response_format.json_schema.schema";
    return c;
  }
  const Json& schema = js->at("schema");
  if (!schema.is_object()) {
    c.skipped_ = "the schema is not an object";
    return c;
  }
  // The engine's compiler as the gate: a schema it refuses (unresolvable or
  // non-local $ref, nesting too deep, wrong keyword types) is not checked.
  auto compiled = CompileJsonSchemaText(schema.dump());
  if (!compiled.ok()) {
    c.skipped_ = compiled.status().message();
    return c;
  }
  if (std::string why = UnsafeRefs(schema); !why.empty()) {
    c.skipped_ = why;
    return c;
  }
  auto out = std::make_unique<Compiled>();
  out->document = schema;
  DropRegexKeywords(&out->document);
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(out->document);
    parser.populateSchema(adapter, out->schema);
  } catch (const std::exception& e) {
    c.skipped_ = fmt::format("valijson: {}", e.what());
    return c;
  }
  c.schema_ = std::move(out);
  return c;
}

std::string AnswerCheck::Check(std::string_view text, std::string* detail) const {
  if (!active_) return "";
  if (MaxDepth(text, kMaxAnswerDepth) > kMaxAnswerDepth) return "too_deep";
  Json value = Json::parse(text, nullptr, false);
  if (value.is_discarded()) return "invalid_json";
  if (schema_ == nullptr) return value.is_object() || value.is_array() ? "" : "invalid_json";
  try {
    valijson::Validator validator(valijson::Validator::kStrongTypes);
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter adapter(value);
    if (validator.validate(schema_->schema, adapter, &results)) return "";
    if (detail != nullptr) {
      valijson::ValidationResults::Error e;
      if (results.popError(e)) {
        std::string where;
        for (const std::string& part : e.context) where += part;
        *detail = fmt::format("{}: {}", where, e.description);
      }
    }
    return "schema_mismatch";
  } catch (const std::exception& e) {
    // valijson could not finish (e.g. a format it cannot check): the answer
    // parsed, so it is not held against it.
    if (detail != nullptr) *detail = fmt::format("not checked: {}", e.what());
    return "";
  }
}

}  // namespace brisk
