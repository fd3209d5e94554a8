// oneOf: enforced exactly (not reported) when its branches are provably
// disjoint, reported as not enforced otherwise (schema_disjoint.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/schema_compiler.h"

namespace brisk {
namespace {

// The unenforced keywords of a schema, as "keyword@pointer".
std::vector<std::string> Unenforced(const std::string& schema) {
  auto c = CompileJsonSchemaText(schema);
  EXPECT_TRUE(c.ok()) << schema << ": " << c.status().ToString();
  std::vector<std::string> out;
  if (c.ok())
    for (const auto& u : c->unenforced) out.push_back(u.ToString());
  return out;
}

TEST(SchemaOneOf, DisjointBranchesAreEnforcedExactly) {
  const std::vector<std::string> none;
  // Different types.
  EXPECT_EQ(Unenforced(R"({"oneOf":[{"type":"integer"},{"type":"string"},{"type":"null"}]})"),
            none);
  EXPECT_EQ(Unenforced(R"({"oneOf":[{"type":["string","null"]},{"type":"array"}]})"), none);
  // Listed values that differ.
  EXPECT_EQ(Unenforced(R"({"oneOf":[{"const":"a"},{"enum":["b","c"]},{"const":3}]})"), none);
  // A tagged union of objects (pydantic / OpenAI tools style), through $refs.
  EXPECT_EQ(Unenforced(R"({"$defs":{
      "cat":{"type":"object","properties":{"kind":{"const":"cat"},"lives":{"type":"integer"}},
             "required":["kind","lives"]},
      "dog":{"type":"object","properties":{"kind":{"enum":["dog","puppy"]},"good":{"type":"boolean"}},
             "required":["kind"]}},
      "oneOf":[{"$ref":"#/$defs/cat"},{"$ref":"#/$defs/dog"}]})"),
            none);
  // The type can come from next to the oneOf.
  EXPECT_EQ(Unenforced(R"({"type":"object","oneOf":[
      {"properties":{"t":{"const":1}},"required":["t"]},
      {"properties":{"t":{"const":2}},"required":["t"]}]})"),
            none);
  // false matches nothing, so it overlaps nothing.
  EXPECT_EQ(Unenforced(R"({"oneOf":[false,{"type":"string"}]})"), none);
}

TEST(SchemaOneOf, OverlappingOrUnprovableBranchesAreReported) {
  const std::vector<std::string> reported = {"oneOf@"};
  // Integers are numbers.
  EXPECT_EQ(Unenforced(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})"), reported);
  // 1 and 1.0 are the same JSON number.
  EXPECT_EQ(Unenforced(R"({"oneOf":[{"const":1},{"enum":[1.0,2]}]})"), reported);
  // Objects without a distinguishing required tag.
  EXPECT_EQ(Unenforced(R"({"oneOf":[
      {"type":"object","properties":{"a":{"type":"string"}}},
      {"type":"object","properties":{"b":{"type":"string"}}}]})"),
            reported);
  // A tag that is not required does not separate them ({} matches both).
  EXPECT_EQ(Unenforced(R"({"oneOf":[
      {"type":"object","properties":{"t":{"const":1}}},
      {"type":"object","properties":{"t":{"const":2}}}]})"),
            reported);
  // Without a type, a string matches both object schemas.
  EXPECT_EQ(Unenforced(R"({"oneOf":[
      {"properties":{"t":{"const":1}},"required":["t"]},
      {"properties":{"t":{"const":2}},"required":["t"]}]})"),
            reported);
  // Untyped branches, and true.
  EXPECT_EQ(Unenforced(R"({"oneOf":[{"minLength":1},{"maxLength":3}]})"), reported);
  EXPECT_EQ(Unenforced(R"({"oneOf":[true,{"type":"string"}]})"), reported);
}

}  // namespace
}  // namespace brisk
