#include "grammar/schema_merge.h"

#include <algorithm>
#include <set>

namespace brisk::schema_merge {
namespace {

std::vector<std::string> TypeList(const Json& t) {
  std::vector<std::string> out;
  if (t.is_string()) out.push_back(t.get<std::string>());
  if (t.is_array())
    for (const Json& x : t)
      if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}

Json IntersectTypes(const Json& a, const Json& b) {
  const std::vector<std::string> ta = TypeList(a), tb = TypeList(b);
  const auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  Json out = Json::array();
  for (const std::string& t : ta) {
    if (has(tb, t)) {
      out.push_back(t);
    } else if (t == "integer" && has(tb, "number")) {
      out.push_back("integer");
    } else if (t == "number" && has(tb, "integer")) {
      out.push_back("integer");
    }
  }
  return out;
}

// Whether every property `part` may have is one `into` lists (so that an
// additionalProperties of `into` keeps its meaning after the merge).
bool PropertiesCovered(const Json& into, const Json& part) {
  if (!part.contains("properties") || !part["properties"].is_object()) return true;
  const Json* ip = into.contains("properties") ? &into["properties"] : nullptr;
  for (const auto& [k, v] : part["properties"].items())
    if (!ip || !ip->is_object() || !ip->contains(k)) return false;
  return true;
}

}  // namespace

bool IsAnnotation(const std::string& k) {
  static const std::set<std::string> kAnnotations = {"title",
                                                     "description",
                                                     "default",
                                                     "examples",
                                                     "$schema",
                                                     "$id",
                                                     "$comment",
                                                     "deprecated",
                                                     "readOnly",
                                                     "writeOnly",
                                                     "$defs",
                                                     "definitions",
                                                     "$anchor",
                                                     "$dynamicAnchor",
                                                     "$vocabulary",
                                                     "contentMediaType",
                                                     "contentEncoding",
                                                     "contentSchema",
                                                     "discriminator",
                                                     "example",
                                                     "xml",
                                                     "externalDocs"};
  return kAnnotations.count(k) != 0;
}

void Merge(Json& into, const Json& part, std::vector<std::string>* conflicts) {
  if (!part.is_object()) {
    if (part.is_boolean() && !part.get<bool>()) into["type"] = Json::array();  // false: no type
    return;
  }
  for (const auto& [k, v] : part.items()) {
    if (IsAnnotation(k)) continue;
    if (!into.contains(k)) {
      if (k == "additionalProperties" && !(v.is_boolean() && v.get<bool>()) &&
          !PropertiesCovered(part, into)) {
        conflicts->push_back(k);
        continue;
      }
      into[k] = v;
      continue;
    }
    Json& cur = into[k];
    if (cur == v) continue;
    if (k == "required" && cur.is_array() && v.is_array()) {
      for (const Json& r : v)
        if (std::find(cur.begin(), cur.end(), r) == cur.end()) cur.push_back(r);
    } else if (k == "properties" && cur.is_object() && v.is_object()) {
      for (const auto& [pk, pv] : v.items()) {
        if (!cur.contains(pk)) {
          cur[pk] = pv;
        } else if (cur[pk] != pv) {
          cur[pk] = Json{{"allOf", Json::array({cur[pk], pv})}};
        }
      }
    } else if (k == "type") {
      cur = IntersectTypes(cur, v);
    } else if ((k == "minLength" || k == "minItems" || k == "minimum" || k == "minProperties") &&
               cur.is_number() && v.is_number()) {
      if (v.get<double>() > cur.get<double>()) cur = v;
    } else if ((k == "maxLength" || k == "maxItems" || k == "maximum" || k == "maxProperties") &&
               cur.is_number() && v.is_number()) {
      if (v.get<double>() < cur.get<double>()) cur = v;
    } else if (k == "exclusiveMinimum" && cur.is_number() && v.is_number()) {
      if (v.get<double>() > cur.get<double>()) cur = v;
    } else if (k == "exclusiveMaximum" && cur.is_number() && v.is_number()) {
      if (v.get<double>() < cur.get<double>()) cur = v;
    } else if (k == "items" && cur.is_object() && v.is_object()) {
      cur = Json{{"allOf", Json::array({cur, v})}};
    } else if (k == "additionalProperties" && v.is_boolean() && v.get<bool>()) {
      // true adds nothing
    } else if (k == "additionalProperties" && cur.is_boolean() && cur.get<bool>() &&
               PropertiesCovered(part, into)) {
      cur = v;
    } else if (k == "enum" && cur.is_array() && v.is_array()) {
      Json keep = Json::array();
      for (const Json& x : cur)
        if (std::find(v.begin(), v.end(), x) != v.end()) keep.push_back(x);
      cur = keep;
    } else {
      conflicts->push_back(k);
    }
  }
}

}  // namespace brisk::schema_merge
