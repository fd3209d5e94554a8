// The per-type parts of the JSON Schema compiler (schema_compiler_impl.h):
// strings (lengths, pattern, format), numbers (bounds, numeric formats),
// objects (properties, required, additionalProperties, patternProperties)
// and arrays.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "grammar/schema_compiler_impl.h"
#include "grammar/string_pattern.h"

namespace brisk::schema_internal {

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
  if (!ReadCount(s, "minProperties", ptr, &spec.min_props) ||
      !ReadCount(s, "maxProperties", ptr, &spec.max_props))
    return Never();
  // Extra members whose schema is `false` cannot be written: none allowed,
  // so that counting toward minProperties never relies on them.
  const auto never = [&](uint32_t node) {
    return node != kNoNode && out_.grammar.nodes[node].kind == NodeKind::kNever;
  };
  if (never(spec.additional)) spec.additional = kNoNode;
  if (never(spec.pattern_value) && spec.additional == kNoNode) spec.key_pattern = kNoNode;
  // Unsatisfiable counts match nothing, as minItems > maxItems does.
  const auto required_count = static_cast<uint32_t>(std::count_if(
      spec.props.begin(), spec.props.end(), [](const auto& p) { return p.required; }));
  const bool has_extra = spec.additional != kNoNode || spec.key_pattern != kNoNode;
  if (spec.min_props > spec.max_props || required_count > spec.max_props ||
      (!has_extra && spec.props.size() < spec.min_props))
    return Never();
  // The grammar does not keep extra keys apart, so {"x":1,"x":2} counts two
  // members where a JSON parser keeps one: with extra keys allowed,
  // minProperties >= 2 is enforced on that count but is not exact, and said.
  if (spec.min_props >= 2 && has_extra) Report("minProperties", ptr);
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

}  // namespace brisk::schema_internal
