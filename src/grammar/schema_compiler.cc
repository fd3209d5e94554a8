#include "grammar/schema_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "grammar/schema_compiler_impl.h"
#include "grammar/schema_disjoint.h"
#include "grammar/schema_merge.h"
#include "grammar/string_pattern.h"

namespace brisk {
namespace schema_internal {
namespace {

constexpr int kMaxSchemaDepth = 128;

// Keywords the compiler enforces (with "nullable" from OpenAPI).
const std::set<std::string>& Enforced() {
  static const std::set<std::string> k = {"type",
                                          "enum",
                                          "const",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "patternProperties",
                                          "items",
                                          "prefixItems",
                                          "additionalItems",
                                          "minItems",
                                          "maxItems",
                                          "minProperties",
                                          "maxProperties",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "nullable"};
  return k;
}

// JSON Schema keywords that constrain and that the compiler does not
// enforce: always reported. Words in no vocabulary are ignored, as
// validators ignore them.
const std::set<std::string>& NotEnforced() {
  static const std::set<std::string> k = {"multipleOf",
                                          "uniqueItems",
                                          "contains",
                                          "minContains",
                                          "maxContains",
                                          "propertyNames",
                                          "dependentRequired",
                                          "dependentSchemas",
                                          "dependencies",
                                          "if",
                                          "then",
                                          "else",
                                          "not",
                                          "unevaluatedProperties",
                                          "unevaluatedItems",
                                          "$dynamicRef",
                                          "$recursiveRef",
                                          "contentSchema"};
  return k;
}

const char* const kTypes[] = {"null", "boolean", "object", "array", "number", "integer", "string"};

}  // namespace

std::string Child(const std::string& ptr, std::string_view a) {
  return ptr + "/" + JsonPointerToken(a);
}
std::string Child(const std::string& ptr, std::string_view a, size_t i) {
  return Child(ptr, a) + "/" + std::to_string(i);
}

const Json* Compiler::Resolve(const std::string& ref) const {
  if (ref.empty() || ref[0] != '#') return nullptr;
  const Json* at = &root_;
  std::string_view rest = std::string_view(ref).substr(1);
  if (rest.empty()) return at;
  if (rest[0] != '/') return nullptr;  // "#anchor": not supported
  while (!rest.empty()) {
    rest.remove_prefix(1);
    const size_t end = rest.find('/');
    std::string tok(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
    std::string key;
    for (size_t i = 0; i < tok.size(); ++i) {
      if (tok[i] == '~' && i + 1 < tok.size()) {
        key += tok[i + 1] == '1' ? '/' : '~';
        ++i;
      } else if (tok[i] == '%' && i + 2 < tok.size()) {
        unsigned byte = 0;
        const char* first = tok.data() + i + 1;
        auto [end_hex, ec] = std::from_chars(first, first + 2, byte, 16);
        if (ec != std::errc() || end_hex != first + 2) return nullptr;  // "%zz": no such key
        key += static_cast<char>(byte);
        i += 2;
      } else {
        key += tok[i];
      }
    }
    if (at->is_object()) {
      auto it = at->find(key);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array()) {
      if (key.empty() || key.find_first_not_of("0123456789") != std::string::npos) return nullptr;
      size_t i = 0;
      auto [end_num, ec] = std::from_chars(key.data(), key.data() + key.size(), i);
      if (ec != std::errc() || end_num != key.data() + key.size() || i >= at->size()) {
        return nullptr;
      }
      at = &(*at)[i];
    } else {
      return nullptr;
    }
  }
  return at;
}

uint32_t Compiler::CompileRef(const Json& s, const std::string& ptr, int depth) {
  const Json& ref = s["$ref"];
  if (!ref.is_string()) return Fail(fmt::format("{}/$ref must be a string", ptr));
  const std::string r = ref.get<std::string>();
  for (const auto& [k, v] : s.items())
    if (k != "$ref" && (Enforced().count(k) || NotEnforced().count(k))) Report(k, ptr);
  if (auto it = refs_.find(r); it != refs_.end()) return it->second;
  const Json* target = Resolve(r);
  if (!target) {
    if (r.empty() || r[0] != '#') {
      Report("$ref", ptr);  // remote: not fetched
      return out_.grammar.AnyValue();
    }
    return Fail(fmt::format("{}/$ref '{}' does not resolve in this schema", ptr, r));
  }
  // The alias node exists before its body, so a recursive reference finds it.
  const uint32_t alias = out_.grammar.AddUnion({});
  refs_.emplace(r, alias);
  const uint32_t body = Compile(*target, r.substr(1), depth + 1);
  out_.grammar.nodes[alias].alts = {body};
  return alias;
}

uint32_t Compiler::Compile(const Json& s, const std::string& ptr, int depth) {
  if (depth > kMaxSchemaDepth || !error_.ok())
    return Fail(fmt::format("schema nested deeper than {} levels at {}", kMaxSchemaDepth, ptr));
  if (s.is_boolean()) return s.get<bool>() ? out_.grammar.AnyValue() : Never();
  if (!s.is_object())
    return Fail(fmt::format("schema at '{}' must be an object or a boolean", ptr));
  if (s.contains("$ref")) return CompileRef(s, ptr, depth);
  for (const auto& [k, v] : s.items())
    if (NotEnforced().count(k)) Report(k, ptr);
  // A format this compiler does not know constrains nothing it can enforce.
  // A string format does not constrain numbers, nor a numeric one strings.
  if (s.contains("format") &&
      (!s["format"].is_string() || (FormatPattern(s["format"].get<std::string>()).empty() &&
                                    !NumericFormatRange(s["format"].get<std::string>()))))
    Report("format", ptr);

  if (s.contains("allOf")) {
    const Json& all = s["allOf"];
    if (!all.is_array()) return Fail(fmt::format("{}/allOf must be an array", ptr));
    Json merged = s;
    merged.erase("allOf");
    for (size_t i = 0; i < all.size(); ++i) {
      const Json* part = &all[i];
      // A part that is only a $ref merges as its target.
      for (int hop = 0; hop < 16 && part->is_object() && part->size() == 1 &&
                        part->contains("$ref") && (*part)["$ref"].is_string();
           ++hop) {
        const Json* t = Resolve((*part)["$ref"].get<std::string>());
        if (!t) break;
        part = t;
      }
      if (part->is_object() && part->contains("$ref")) {
        Report("allOf", Child(ptr, "allOf", i));  // a $ref with siblings or cycle: not merged
        continue;
      }
      std::vector<std::string> conflicts;
      schema_merge::Merge(merged, *part, &conflicts);
      for (const std::string& c : conflicts) Report("allOf", Child(Child(ptr, "allOf", i), c));
    }
    return Compile(merged, ptr, depth + 1);
  }

  if (s.contains("anyOf")) {
    if (s.contains("oneOf")) Report("oneOf", ptr);  // both: only anyOf is enforced
    return CompileAlternatives(s, "anyOf", ptr, depth);
  }
  if (s.contains("oneOf")) {
    // Compiled as anyOf: exact when no value can match two branches
    // (schema_disjoint.h), else "exactly one" is not checked and is said.
    if (!schema_disjoint::BranchesAreDisjoint(
            s, "oneOf", [this](const std::string& ref) { return Resolve(ref); }))
      Report("oneOf", ptr);
    return CompileAlternatives(s, "oneOf", ptr, depth);
  }
  if (s.contains("enum") || s.contains("const")) return CompileLiterals(s, ptr);

  // Types: the listed ones, or every type the keywords allow.
  std::vector<std::string> types;
  if (s.contains("type")) {
    const Json& t = s["type"];
    if (t.is_string()) {
      types.push_back(t.get<std::string>());
    } else if (t.is_array()) {
      for (const Json& x : t) {
        if (!x.is_string()) return Fail(fmt::format("{}/type must hold strings", ptr));
        types.push_back(x.get<std::string>());
      }
    } else {
      return Fail(fmt::format("{}/type must be a string or an array", ptr));
    }
    for (const std::string& ty : types)
      if (std::find(std::begin(kTypes), std::end(kTypes), ty) == std::end(kTypes))
        return Fail(fmt::format("{}/type: unknown type '{}'", ptr, ty));
    if (s.contains("nullable") && s["nullable"].is_boolean() && s["nullable"].get<bool>())
      types.push_back("null");
  } else {
    bool constrained = false;
    for (const auto& [k, v] : s.items()) constrained |= Enforced().count(k) != 0 && k != "nullable";
    if (!constrained) return out_.grammar.AnyValue();
    types.assign(std::begin(kTypes), std::end(kTypes));
  }
  const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
  std::vector<uint32_t> alts;
  std::set<std::string> seen;
  for (const std::string& ty : types) {
    if (ty == "integer" && has_number) continue;  // number already allows integers
    if (!seen.insert(ty).second) continue;
    alts.push_back(CompileType(ty, s, ptr, depth));
  }
  if (alts.empty()) return Never();
  if (alts.size() == 1) return alts[0];
  return out_.grammar.AddUnion(std::move(alts));
}

uint32_t Compiler::CompileAlternatives(const Json& s, const char* key, const std::string& ptr,
                                       int depth) {
  const Json& list = s[key];
  if (!list.is_array() || list.empty())
    return Fail(fmt::format("{}/{} must be a non-empty array", ptr, key));
  // Keywords next to anyOf apply to every alternative: merge them in.
  Json siblings = s;
  siblings.erase(key);
  bool plain = true;
  for (const auto& [k, v] : siblings.items()) plain &= schema_merge::IsAnnotation(k);
  std::vector<uint32_t> alts;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string p = Child(ptr, key, i);
    if (plain) {
      alts.push_back(Compile(list[i], p, depth + 1));
      continue;
    }
    Json merged = siblings;
    const Json* part = &list[i];
    if (part->is_object() && part->contains("$ref") && (*part)["$ref"].is_string())
      if (const Json* t = Resolve((*part)["$ref"].get<std::string>())) part = t;
    std::vector<std::string> conflicts;
    schema_merge::Merge(merged, *part, &conflicts);
    for (const std::string& c : conflicts) Report(key, Child(p, c));
    alts.push_back(Compile(merged, p, depth + 1));
  }
  return alts.size() == 1 ? alts[0] : out_.grammar.AddUnion(std::move(alts));
}

uint32_t Compiler::CompileLiterals(const Json& s, const std::string& ptr) {
  std::vector<Json> values;
  if (s.contains("const")) {
    values.push_back(s["const"]);
    if (s.contains("enum")) {
      const Json& e = s["enum"];
      if (!e.is_array() || std::find(e.begin(), e.end(), s["const"]) == e.end()) values.clear();
    }
  } else {
    const Json& e = s["enum"];
    if (!e.is_array()) return Fail(fmt::format("{}/enum must be an array", ptr));
    values.assign(e.begin(), e.end());
  }
  std::vector<std::string> types;
  if (s.contains("type")) {
    const Json& t = s["type"];
    if (t.is_string()) types.push_back(t.get<std::string>());
    if (t.is_array())
      for (const Json& x : t)
        if (x.is_string()) types.push_back(x.get<std::string>());
  }
  const auto type_ok = [&](const Json& v) {
    if (!s.contains("type")) return true;
    const auto has = [&](const char* t) {
      return std::find(types.begin(), types.end(), t) != types.end();
    };
    if (v.is_null()) return has("null");
    if (v.is_boolean()) return has("boolean");
    if (v.is_string()) return has("string");
    if (v.is_object()) return has("object");
    if (v.is_array()) return has("array");
    if (v.is_number_integer() || v.is_number_unsigned()) return has("integer") || has("number");
    if (v.is_number_float()) {
      const double d = v.get<double>();
      return has("number") || (has("integer") && std::floor(d) == d);
    }
    return false;
  };
  for (const auto& [k, v] : s.items())
    if (k != "enum" && k != "const" && k != "type" && Enforced().count(k)) Report(k, ptr);
  std::vector<std::string> texts;
  for (const Json& v : values)
    if (type_ok(v)) texts.push_back(v.dump());
  return out_.grammar.AddLiterals(texts);
}

uint32_t Compiler::CompileType(const std::string& type, const Json& s, const std::string& ptr,
                               int depth) {
  if (type == "null") return out_.grammar.AddLiterals({"null"});
  if (type == "boolean") return out_.grammar.AddLiterals({"true", "false"});
  if (type == "string") return CompileString(s, ptr);
  if (type == "integer" || type == "number") return CompileNumber(type == "integer", s, ptr);
  if (type == "object") return CompileObject(s, ptr, depth);
  return CompileArray(s, ptr, depth);
}

}  // namespace schema_internal

std::string JsonPointerToken(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Expected<CompiledSchema> CompileJsonSchema(const nlohmann::ordered_json& schema,
                                           const CompileOptions& options) {
  return schema_internal::Compiler(schema, options).Run();
}

Expected<CompiledSchema> CompileJsonSchemaText(std::string_view text,
                                               const CompileOptions& options) {
  schema_internal::Json schema =
      schema_internal::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return InvalidArgument("the schema is not valid JSON");
  return CompileJsonSchema(schema, options);
}

CompiledSchema CompileAnyJsonObject() {
  CompiledSchema out;
  out.grammar.root = out.grammar.AnyObject();
  return out;
}

}  // namespace brisk
