#include "grammar/schema_disjoint.h"

#include <cmath>
#include <map>
#include <optional>
#include <vector>

namespace brisk::schema_disjoint {
namespace {

// JSON types as bits; "number" is integer | fraction.
enum : unsigned {
  kNull = 1,
  kBool = 2,
  kObject = 4,
  kArray = 8,
  kString = 16,
  kInteger = 32,
  kFraction = 64,
  kAll = 127
};

unsigned TypeBit(const std::string& t) {
  if (t == "null") return kNull;
  if (t == "boolean") return kBool;
  if (t == "object") return kObject;
  if (t == "array") return kArray;
  if (t == "string") return kString;
  if (t == "integer") return kInteger;
  if (t == "number") return kInteger | kFraction;
  return kAll;  // unknown: the compiler reports it; assume anything
}

unsigned ValueBit(const Json& v) {
  if (v.is_null()) return kNull;
  if (v.is_boolean()) return kBool;
  if (v.is_object()) return kObject;
  if (v.is_array()) return kArray;
  if (v.is_string()) return kString;
  if (v.is_number_integer() || v.is_number_unsigned()) return kInteger;
  const double d = v.get<double>();
  return std::floor(d) == d ? kInteger : kFraction;
}

// The types a schema's own "type" (and nullable) allows; kAll without one.
unsigned DeclaredTypes(const Json& s) {
  if (!s.is_object() || !s.contains("type")) return kAll;
  const Json& t = s["type"];
  unsigned bits = 0;
  if (t.is_string()) {
    bits = TypeBit(t.get<std::string>());
  } else if (t.is_array()) {
    for (const Json& x : t) bits |= x.is_string() ? TypeBit(x.get<std::string>()) : kAll;
  } else {
    return kAll;
  }
  if (s.contains("nullable") && s["nullable"].is_boolean() && s["nullable"].get<bool>())
    bits |= kNull;
  return bits;
}

// The values a schema allows when it lists them (const, enum).
std::optional<std::vector<Json>> Literals(const Json& s) {
  if (!s.is_object()) return std::nullopt;
  if (s.contains("const")) return std::vector<Json>{s["const"]};
  if (s.contains("enum") && s["enum"].is_array())
    return std::vector<Json>(s["enum"].begin(), s["enum"].end());
  return std::nullopt;
}

bool Share(const std::vector<Json>& a, const std::vector<Json>& b) {
  for (const Json& x : a)
    for (const Json& y : b)
      if (x == y) return true;
  return false;
}

struct Shape {
  unsigned types = kAll;
  std::optional<std::vector<Json>> literals;
  // Required properties whose values are listed (const/enum): the tags.
  std::map<std::string, std::vector<Json>> tags;
};

const Json* Follow(const Json* s, const Resolver& resolve) {
  for (int hop = 0;
       hop < 16 && s && s->is_object() && s->contains("$ref") && (*s)["$ref"].is_string(); ++hop)
    s = resolve((*s)["$ref"].get<std::string>());
  return s;
}

std::optional<Shape> ShapeOf(const Json* branch, unsigned parent_types, const Resolver& resolve) {
  const Json* s = Follow(branch, resolve);
  if (!s) return std::nullopt;
  Shape out;
  if (s->is_boolean()) {
    out.types = s->get<bool>() ? parent_types : 0;
    return out;
  }
  if (!s->is_object()) return std::nullopt;
  out.types = DeclaredTypes(*s) & parent_types;
  out.literals = Literals(*s);
  if (out.literals) {
    unsigned bits = 0;
    for (const Json& v : *out.literals) bits |= ValueBit(v);
    out.types &= bits;
  }
  if (s->contains("properties") && (*s)["properties"].is_object() && s->contains("required") &&
      (*s)["required"].is_array()) {
    const Json& props = (*s)["properties"];
    for (const Json& k : (*s)["required"]) {
      if (!k.is_string() || !props.contains(k.get<std::string>())) continue;
      const Json* p = Follow(&props[k.get<std::string>()], resolve);
      if (!p) continue;
      if (auto lit = Literals(*p)) out.tags.emplace(k.get<std::string>(), std::move(*lit));
    }
  }
  return out;
}

bool Disjoint(const Shape& a, const Shape& b) {
  const unsigned common = a.types & b.types;
  if (common == 0) return true;
  if (a.literals && b.literals) return !Share(*a.literals, *b.literals);
  if (common != kObject) return false;
  for (const auto& [k, values] : a.tags)
    if (auto it = b.tags.find(k); it != b.tags.end() && !Share(values, it->second)) return true;
  return false;
}

}  // namespace

bool BranchesAreDisjoint(const Json& parent, const char* key, const Resolver& resolve) {
  if (!parent.is_object() || !parent.contains(key) || !parent[key].is_array()) return false;
  const unsigned parent_types = DeclaredTypes(parent);
  std::vector<Shape> shapes;
  for (const Json& b : parent[key]) {
    auto s = ShapeOf(&b, parent_types, resolve);
    if (!s) return false;
    shapes.push_back(std::move(*s));
  }
  for (size_t i = 0; i < shapes.size(); ++i)
    for (size_t j = i + 1; j < shapes.size(); ++j)
      if (!Disjoint(shapes[i], shapes[j])) return false;
  return true;
}

}  // namespace brisk::schema_disjoint
