// Whether the branches of a oneOf are provably disjoint (no value matches
// two of them), judged from the schemas alone. Then "exactly one matches"
// and "at least one matches" accept the same values, and the compiler's
// anyOf grammar enforces the oneOf exactly; otherwise it reports oneOf as
// not enforced. Internal to the schema compiler.
//
// Proofs it knows (the common shapes of real schemas): different JSON types
// (integer and number overlap); disjoint const/enum values; objects that
// both require a property whose const/enum values differ (a tagged union,
// as OpenAI tool schemas and pydantic discriminated unions write them).
// Anything else counts as overlapping, which is safe: the keyword is then
// reported, never silently weakened.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace brisk::schema_disjoint {

using Json = nlohmann::ordered_json;
// A local $ref ("#/...") to its target, or null.
using Resolver = std::function<const Json*(const std::string&)>;

// `parent` holds `key` ("oneOf"); its other keywords apply to every branch.
bool BranchesAreDisjoint(const Json& parent, const char* key, const Resolver& resolve);

}  // namespace brisk::schema_disjoint
