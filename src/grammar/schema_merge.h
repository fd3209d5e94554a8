// allOf by merging: the parts of an allOf (and the keywords next to an
// anyOf, into each alternative) become one schema. Internal to the schema
// compiler.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace brisk::schema_merge {

using Json = nlohmann::ordered_json;

// Merges `part` into `into` so that the result accepts exactly what both
// accept, where this function knows how: bounds tighten, required and
// properties unite (a property in both becomes {"allOf": [a, b]}), types
// intersect. A keyword it cannot merge soundly is appended to *conflicts
// (and `into` keeps its own value): the caller reports "allOf" there.
void Merge(Json& into, const Json& part, std::vector<std::string>* conflicts);

// Keywords that only annotate (never change what validates).
bool IsAnnotation(const std::string& keyword);

}  // namespace brisk::schema_merge
