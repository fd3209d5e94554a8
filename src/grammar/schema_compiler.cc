#include "grammar/schema_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "grammar/schema_disjoint.h"
#include "grammar/schema_merge.h"
#include "grammar/string_pattern.h"

namespace brisk {
namespace {

using Json = nlohmann::ordered_json;

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
                                          "minProperties",
                                          "maxProperties",
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

class Compiler {
 public:
  Compiler(const Json& root, const CompileOptions& opt) : root_(root), opt_(opt) {}

  Expected<CompiledSchema> Run() {
    const uint32_t root = Compile(root_, "", 0);
    if (!error_.ok()) return error_;
    out_.grammar.root = root;
    return std::move(out_);
  }

 private:
  void Report(const std::string& keyword, const std::string& ptr) {
    if (reported_.emplace(keyword, ptr).second) out_.unenforced.push_back({keyword, ptr});
  }
  uint32_t Fail(std::string msg) {
    if (error_.ok()) error_ = InvalidArgument("{}", msg);
    return out_.grammar.AddNode({});
  }
  uint32_t Never() { return out_.grammar.AddNode({}); }

  uint32_t Compile(const Json& s, const std::string& ptr, int depth);
  uint32_t CompileRef(const Json& s, const std::string& ptr, int depth);
  uint32_t CompileAlternatives(const Json& s, const char* key, const std::string& ptr, int depth);
  uint32_t CompileLiterals(const Json& s, const std::string& ptr);
  uint32_t CompileType(const std::string& type, const Json& s, const std::string& ptr, int depth);
  uint32_t CompileObject(const Json& s, const std::string& ptr, int depth);
  uint32_t CompileArray(const Json& s, const std::string& ptr, int depth);
  uint32_t CompileNumber(bool integer, const Json& s, const std::string& ptr);
  // patternProperties into `spec`; false where it cannot be enforced (the
  // caller reports it).
  bool CompilePatternProperties(const Json& s, const std::string& ptr, int depth, ObjectSpec* spec);
  uint32_t CompileString(const Json& s, const std::string& ptr);
  bool ReadCount(const Json& s, const char* key, const std::string& ptr, uint32_t* out);
  // The schema a local "$ref" points at, or nullptr.
  const Json* Resolve(const std::string& ref) const;

  const Json& root_;
  const CompileOptions& opt_;
  CompiledSchema out_;
  Status error_;
  std::map<std::string, uint32_t> refs_;                    // resolved pointer -> alias node
  std::set<std::pair<std::string, std::string>> reported_;  // (keyword, pointer)
  // String schemas with a pattern or format: node and keywords left out.
  std::map<std::string, std::pair<uint32_t, std::vector<std::string>>> strings_;
};

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

bool Compiler::ReadCount(const Json& s, const char* key, const std::string& ptr, uint32_t* out) {
  if (!s.contains(key)) return true;
  const Json& v = s[key];
  if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>()) {
    Fail(fmt::format("{}/{} must be a non-negative integer", ptr, key));
    return false;
  }
  const double d = v.get<double>();
  *out = d >= static_cast<double>(kUnbounded) ? kUnbounded - 1 : static_cast<uint32_t>(d);
  return true;
}

uint32_t Compiler::CompileString(const Json& s, const std::string& ptr) {
  uint32_t lo = 0, hi = kUnbounded;
  if (!ReadCount(s, "minLength", ptr, &lo) || !ReadCount(s, "maxLength", ptr, &hi)) return Never();
  if (lo > hi) return Never();
  const std::string* pattern = nullptr;
  const std::string* format = nullptr;
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return Fail(fmt::format("{}/pattern must be a string", ptr));
    pattern = s["pattern"].get_ptr<const std::string*>();
  }
  if (s.contains("format") && s["format"].is_string())
    format = s["format"].get_ptr<const std::string*>();
  if (!pattern && !format) return out_.grammar.AddString(lo, hi);
  // pattern / format / lengths: one DFA (string_pattern.h), built once per
  // combination ($refs expand the same strings many times).
  const auto size = [](const std::string* x) { return x ? static_cast<int64_t>(x->size()) : -1; };
  const std::string key = fmt::format("{} {} {} {}:{}{}", size(pattern), size(format), lo, hi,
                                      pattern ? *pattern : "", format ? *format : "");
  auto it = strings_.find(key);
  if (it == strings_.end()) {
    StringContents c = CompileStringContents(pattern, format, lo, hi);
    uint32_t node = 0;
    if (!c.dfa)
      node = out_.grammar.AddString(lo, hi);
    else if (c.dfa->empty())
      node = Never();
    else
      node = out_.grammar.AddPatternString(std::move(*c.dfa));
    it = strings_.emplace(key, std::make_pair(node, std::move(c.unenforced))).first;
  }
  for (const std::string& k : it->second.second) Report(k, ptr);
  return it->second.first;
}

uint32_t Compiler::CompileNumber(bool integer, const Json& s, const std::string& ptr) {
  NumberSpec n;
  n.integer = integer;
  const auto num = [&](const char* key, double* out) {
    if (!s.contains(key) || s[key].is_boolean()) return false;
    if (!s[key].is_number()) {
      Fail(fmt::format("{}/{} must be a number", ptr, key));
      return false;
    }
    *out = s[key].get<double>();
    return true;
  };
  const auto flag = [&](const char* key) {
    return s.contains(key) && s[key].is_boolean() && s[key].get<bool>();
  };
  double v = 0;
  if (num("minimum", &v)) n.has_lo = true, n.lo = v, n.lo_exclusive = flag("exclusiveMinimum");
  if (num("maximum", &v)) n.has_hi = true, n.hi = v, n.hi_exclusive = flag("exclusiveMaximum");
  if (num("exclusiveMinimum", &v) && (!n.has_lo || v >= n.lo))
    n.has_lo = true, n.lo = v, n.lo_exclusive = true;
  if (num("exclusiveMaximum", &v) && (!n.has_hi || v <= n.hi))
    n.has_hi = true, n.hi = v, n.hi_exclusive = true;
  if (s.contains("format") && s["format"].is_string()) {
    if (const auto range = NumericFormatRange(s["format"].get<std::string>())) {
      if (std::isfinite(range->first) && (!n.has_lo || range->first > n.lo))
        n.has_lo = true, n.lo = range->first, n.lo_exclusive = false;
      if (std::isfinite(range->second) && (!n.has_hi || range->second < n.hi))
        n.has_hi = true, n.hi = range->second, n.hi_exclusive = false;
    }
  }
  if (integer) {
    // Integral inclusive bounds: the matcher's interval tests rely on them.
    if (n.has_lo) {
      const double c = std::ceil(n.lo);
      n.lo = (n.lo_exclusive && c == n.lo) ? c + 1 : c;
      n.lo_exclusive = false;
    }
    if (n.has_hi) {
      const double f = std::floor(n.hi);
      n.hi = (n.hi_exclusive && f == n.hi) ? f - 1 : f;
      n.hi_exclusive = false;
    }
  }
  if (n.has_lo && n.has_hi && (n.lo > n.hi || (n.lo == n.hi && (n.lo_exclusive || n.hi_exclusive))))
    return Never();
  return out_.grammar.AddNumber(n);
}

uint32_t Compiler::CompileObject(const Json& s, const std::string& ptr, int depth) {
  ObjectSpec spec;
  std::vector<std::string> required;
  if (s.contains("required")) {
    const Json& r = s["required"];
    if (!r.is_array()) return Fail(fmt::format("{}/required must be an array", ptr));
    for (const Json& x : r) {
      if (!x.is_string()) return Fail(fmt::format("{}/required must hold strings", ptr));
      if (std::find(required.begin(), required.end(), x.get<std::string>()) == required.end())
        required.push_back(x.get<std::string>());
    }
  }
  const auto is_required = [&](const std::string& k) {
    return std::find(required.begin(), required.end(), k) != required.end();
  };
  std::set<std::string> listed;
  if (s.contains("properties")) {
    const Json& props = s["properties"];
    if (!props.is_object()) return Fail(fmt::format("{}/properties must be an object", ptr));
    for (const auto& [k, v] : props.items()) {
      ObjectSpec::Property p;
      p.key_text = CanonicalJsonStringContents(k);
      p.value = Compile(v, Child(Child(ptr, "properties"), k), depth + 1);
      p.required = is_required(k);
      listed.insert(k);
      spec.props.push_back(std::move(p));
    }
  }
  // Required names without a schema in `properties`: any value, after the listed ones.
  for (const std::string& k : required) {
    if (listed.count(k)) continue;
    spec.props.push_back({CanonicalJsonStringContents(k), out_.grammar.AnyValue(), true});
  }
  if (s.contains("additionalProperties")) {
    const Json& a = s["additionalProperties"];
    if (a.is_boolean()) {
      spec.additional = a.get<bool>() ? out_.grammar.AnyValue() : kNoNode;
    } else {
      spec.additional = Compile(a, Child(ptr, "additionalProperties"), depth + 1);
    }
  } else if (!opt_.strict_defaults) {
    spec.additional = out_.grammar.AnyValue();
  }
  if (s.contains("patternProperties") && !CompilePatternProperties(s, ptr, depth, &spec))
    Report("patternProperties", ptr);
  return out_.grammar.AddObject(std::move(spec));
}

bool Compiler::CompilePatternProperties(const Json& s, const std::string& ptr, int depth,
                                        ObjectSpec* spec) {
  const Json& pp = s["patternProperties"];
  if (!pp.is_object()) {
    Fail(fmt::format("{}/patternProperties must be an object", ptr));
    return true;
  }
  if (pp.empty()) return true;
  // One pattern; keys matching several patterns would need the values'
  // intersection.
  if (pp.size() != 1) return false;
  const auto it = pp.begin();
  const std::string& pattern = it.key();
  const Json& schema = it.value();
  auto dfa = CompilePatternDfa(pattern);
  if (!dfa.ok()) return false;
  if (dfa->empty()) return true;  // no key matches it
  // A listed key that also matches must satisfy both schemas: only when
  // the pattern's schema allows anything.
  const bool any =
      (schema.is_boolean() && schema.get<bool>()) || (schema.is_object() && schema.empty());
  for (const auto& p : spec->props)
    if (!any && dfa->Accepts(p.key_text)) return false;
  spec->key_pattern = out_.grammar.AddPattern(std::move(*dfa));
  spec->pattern_value = Compile(schema, Child(Child(ptr, "patternProperties"), pattern), depth + 1);
  return true;
}

uint32_t Compiler::CompileArray(const Json& s, const std::string& ptr, int depth) {
  ArraySpec spec;
  if (!ReadCount(s, "minItems", ptr, &spec.min_items) ||
      !ReadCount(s, "maxItems", ptr, &spec.max_items))
    return Never();
  const Json* prefix = nullptr;
  std::string prefix_key;
  if (s.contains("prefixItems")) {
    prefix = &s["prefixItems"], prefix_key = "prefixItems";
  } else if (s.contains("items") && s["items"].is_array()) {
    prefix = &s["items"], prefix_key = "items";  // draft 4-2019 tuple form
  }
  if (prefix) {
    if (!prefix->is_array()) return Fail(fmt::format("{}/{} must be an array", ptr, prefix_key));
    for (size_t i = 0; i < prefix->size(); ++i)
      spec.prefix.push_back(Compile((*prefix)[i], Child(ptr, prefix_key, i), depth + 1));
  }
  // What follows the prefix.
  const char* rest_key = prefix_key == "items" ? "additionalItems" : "items";
  if (s.contains(rest_key) && !(prefix_key != "items" && s[rest_key].is_array())) {
    const Json& r = s[rest_key];
    if (r.is_boolean()) {
      spec.items = r.get<bool>() ? out_.grammar.AnyValue() : kNoNode;
    } else {
      spec.items = Compile(r, Child(ptr, rest_key), depth + 1);
    }
  } else if (!prefix || !opt_.strict_defaults) {
    spec.items = out_.grammar.AnyValue();
  }
  if (spec.min_items > spec.max_items) return Never();
  if (spec.items == kNoNode && spec.min_items > spec.prefix.size()) return Never();
  return out_.grammar.AddArray(std::move(spec));
}

}  // namespace

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
  return Compiler(schema, options).Run();
}

Expected<CompiledSchema> CompileJsonSchemaText(std::string_view text,
                                               const CompileOptions& options) {
  Json schema = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return InvalidArgument("the schema is not valid JSON");
  return CompileJsonSchema(schema, options);
}

CompiledSchema CompileAnyJsonObject() {
  CompiledSchema out;
  out.grammar.root = out.grammar.AnyObject();
  return out;
}

}  // namespace brisk
