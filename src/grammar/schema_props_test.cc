// minProperties / maxProperties: the matcher counts members as they are
// written (ObjectSpec::min_props / max_props), so '}' waits for the minimum
// and ',' stops at the maximum; unsatisfiable counts compile to "never".
// Besides hand-written accept/reject cases, small schemas are explored
// exhaustively over a tiny alphabet: every accepted prefix can still be
// completed (no dead end), and every complete text validates by a direct
// reading of the schema (no wrong accept).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/schema_compiler.h"

namespace brisk {
namespace {

CompiledSchema Compile(const std::string& schema) {
  auto c = CompileJsonSchemaText(schema);
  EXPECT_TRUE(c.ok()) << schema << ": " << c.status().ToString();
  return c.ok() ? std::move(*c) : CompiledSchema{};
}

std::vector<std::string> Unenforced(const std::string& schema) {
  std::vector<std::string> out;
  for (const auto& u : Compile(schema).unenforced) out.push_back(u.ToString());
  return out;
}

// Every prefix of `text` is taken byte by byte and the whole text can end.
bool Accepts(const JsonGrammar& g, const std::string& text) {
  GrammarMatcher m(&g);
  for (char ch : text)
    if (!m.Advance(static_cast<uint8_t>(ch))) return false;
  return m.CanEnd();
}

void Check(const std::string& schema, const std::vector<std::string>& good,
           const std::vector<std::string>& bad) {
  const CompiledSchema c = Compile(schema);
  for (const auto& t : good) EXPECT_TRUE(Accepts(c.grammar, t)) << schema << " should accept " << t;
  for (const auto& t : bad) EXPECT_FALSE(Accepts(c.grammar, t)) << schema << " should reject " << t;
}

TEST(SchemaProps, MinPropertiesWithoutRequired) {
  const char* s1 = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
      "minProperties":1})";
  Check(s1, {R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"}, {"{}"});
  const char* s2 = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
      "c":{"type":"integer"}},"minProperties":2})";
  Check(s2, {R"({"a":1,"b":2})", R"({"a":1,"c":3})", R"({"b":1,"c":3})", R"({"a":1,"b":2,"c":3})"},
        {"{}", R"({"a":1})", R"({"c":1})"});
  // Every prefix of an accepted instance is a prefix; {"a":1} is not closable.
  const CompiledSchema c = Compile(s2);
  GrammarMatcher m(&c.grammar);
  ASSERT_TRUE(m.AdvanceBytes(R"({"a":1)"));
  EXPECT_FALSE(m.CanEnd());
  GrammarMatcher close;
  close.CopyFrom(m);
  EXPECT_FALSE(close.Advance('}'));
  EXPECT_TRUE(m.Advance(','));
  // After "a", the last listed key "c" still leaves room for 2 members; after
  // writing "c" first, nothing could follow, so it is refused at once.
  GrammarMatcher first(&c.grammar);
  EXPECT_FALSE(first.AdvanceBytes(R"({"c")"));
  EXPECT_TRUE(first.AdvanceBytes(R"({"b")"));
}

TEST(SchemaProps, MinPropertiesWithRequired) {
  Check(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
      "required":["b"],"minProperties":2})",
        {R"({"a":1,"b":2})"}, {R"({"b":2})", "{}", R"({"a":1})"});
  Check(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],
      "minProperties":1})",
        {R"({"a":1})"}, {"{}"});
}

TEST(SchemaProps, MaxProperties) {
  const char* props = R"("properties":{"a":{"type":"integer"},"b":{"type":"integer"},
      "c":{"type":"integer"}})";
  Check(std::string(R"({"type":"object",)") + props + R"(,"maxProperties":0})", {"{}"},
        {R"({"a":1})"});
  Check(std::string(R"({"type":"object",)") + props + R"(,"maxProperties":1})",
        {"{}", R"({"a":1})", R"({"c":1})"}, {R"({"a":1,"b":2})", R"({"b":1,"c":2})"});
  Check(std::string(R"({"type":"object",)") + props + R"(,"maxProperties":2})",
        {"{}", R"({"a":1,"b":2})", R"({"a":1,"c":2})"}, {R"({"a":1,"b":2,"c":3})"});
  // Required ones keep their place under the maximum: with "c" required and
  // one member allowed, "a" may not be written.
  Check(std::string(R"({"type":"object",)") + props + R"(,"required":["c"],"maxProperties":1})",
        {R"({"c":1})"}, {R"({"a":1,"c":2})", R"({"a":1})", "{}"});
  // After the maximum, ',' is refused at once.
  const CompiledSchema c =
      Compile(std::string(R"({"type":"object",)") + props + R"(,"maxProperties":1})");
  GrammarMatcher m(&c.grammar);
  ASSERT_TRUE(m.AdvanceBytes(R"({"a":1)"));
  EXPECT_FALSE(m.Advance(','));
}

TEST(SchemaProps, WithAdditionalProperties) {
  const char* map = R"({"type":"object","additionalProperties":{"type":"integer"},
      "minProperties":1,"maxProperties":2})";
  Check(map, {R"({"x":1})", R"({"x":1,"y":2})"}, {"{}", R"({"x":1,"y":2,"z":3})"});
  EXPECT_TRUE(Unenforced(map).empty());
  // Listed and extra members count together.
  Check(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":true,
      "maxProperties":2})",
        {R"({"a":1,"x":2})", R"({"x":1,"y":2})"}, {R"({"a":1,"x":2,"y":3})"});
  // additionalProperties false: as many listed properties as the minimum
  // needs, or nothing matches.
  Check(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
      "additionalProperties":false,"minProperties":2})",
        {R"({"a":1,"b":2})"}, {R"({"a":1})", R"({"b":1})", "{}", R"({"a":1,"x":2})"});
}

TEST(SchemaProps, BothBounds) {
  Check(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
      "c":{"type":"integer"}},"minProperties":2,"maxProperties":2})",
        {R"({"a":1,"b":2})", R"({"b":1,"c":2})", R"({"a":1,"c":2})"},
        {R"({"a":1})", R"({"a":1,"b":2,"c":3})", "{}"});
}

TEST(SchemaProps, NestedObjects) {
  Check(R"({"type":"object","properties":{"o":{"type":"object","properties":{
      "p":{"type":"integer"},"q":{"type":"integer"}},"minProperties":1,"maxProperties":1},
      "z":{"type":"integer"}},"required":["o"],"maxProperties":1})",
        {R"({"o":{"p":1}})", R"({"o":{"q":1}})"},
        {R"({"o":{}})", R"({"o":{"p":1,"q":2}})", R"({"o":{"p":1},"z":1})"});
}

TEST(SchemaProps, WithPatternProperties) {
  const char* s = R"({"type":"object","patternProperties":{"^x[0-9]+$":{"type":"integer"}},
      "additionalProperties":false,"minProperties":1,"maxProperties":2})";
  Check(s, {R"({"x1":1})", R"({"x1":1,"x22":2})"},
        {"{}", R"({"y":1})", R"({"x1":1,"x2":2,"x3":3})"});
  Check(R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],
      "patternProperties":{"^t_":{"type":"string"}},"minProperties":2})",
        {R"({"id":1,"t_a":"v"})"}, {R"({"id":1})", R"({"id":1,"u":"v"})"});
}

TEST(SchemaProps, UnsatisfiableCountsMatchNothing) {
  // Fewer listed properties than the minimum and no extra keys.
  Check(R"({"type":"object","properties":{"a":{}},"additionalProperties":false,
      "minProperties":2})",
        {}, {"{}", R"({"a":1})"});
  // More required properties than the maximum.
  Check(R"({"type":"object","properties":{"a":{},"b":{}},"required":["a","b"],
      "maxProperties":1})",
        {}, {R"({"a":1,"b":2})", R"({"a":1})"});
  Check(R"({"type":"object","minProperties":3,"maxProperties":2,"additionalProperties":true})", {},
        {"{}", R"({"a":1,"b":2})"});
  // A union keeps its other branches.
  Check(R"({"anyOf":[{"type":"object","additionalProperties":false,"minProperties":1},
      {"type":"string"}]})",
        {R"("s")"}, {"{}"});
}

TEST(SchemaProps, ReportsOnlyTheInexactCase) {
  const std::vector<std::string> none;
  EXPECT_EQ(Unenforced(R"({"type":"object","properties":{"a":{},"b":{}},"minProperties":2,
      "maxProperties":2})"),
            none);
  EXPECT_EQ(Unenforced(R"({"type":"object","additionalProperties":true,"maxProperties":3,
      "minProperties":1})"),
            none);
  // A repeated extra key would count twice toward the minimum.
  EXPECT_EQ(Unenforced(R"({"type":"object","properties":{"n":{"type":"object",
      "additionalProperties":{"type":"string"},"minProperties":2}}})"),
            std::vector<std::string>{"minProperties@/properties/n"});
  // Next to enum, nothing but type is enforced.
  EXPECT_EQ(Unenforced(R"({"enum":[{}],"minProperties":1})"),
            std::vector<std::string>{"minProperties@"});
}

TEST(SchemaProps, JsonObjectModeIsUntouched) {
  const CompiledSchema c = CompileAnyJsonObject();
  EXPECT_TRUE(Accepts(c.grammar, "{}"));
  EXPECT_TRUE(Accepts(c.grammar, R"({"a":1,"a":2,"b":{}})"));
}

// The exhaustive check: texts of tiny tokens (keys a, b, c, x; every value
// the literal 1), up to kLen bytes.
constexpr size_t kLen = 30;
const char* const kTokens[] = {"{", "}", "\"a\"", "\"b\"", "\"c\"", "\"x\"", ":", ",", "1"};

// Whether `m` can still reach an end within `depth` bytes (searched
// depth-first, closing bytes first, so the search stays small).
bool CanComplete(const GrammarMatcher& m, int depth, int* budget) {
  if (m.CanEnd()) return true;
  if (depth == 0 || --*budget < 0) return false;
  GrammarMatcher next;
  // Closing bytes first: a completion, where there is one, is found greedily.
  for (const char* ch = "\"}1:,abcx{"; *ch; ++ch) {
    next.CopyFrom(m);
    if (next.Advance(static_cast<uint8_t>(*ch)) && CanComplete(next, depth - 1, budget))
      return true;
  }
  return false;
}

// Whether the compact object `text` validates per the schema's own words.
// `written_min`: minProperties counts members as written (a repeated key
// twice), the reported inexact case.
bool Valid(const nlohmann::ordered_json& schema, const std::string& text, bool written_min) {
  const auto v = nlohmann::ordered_json::parse(text, nullptr, false);
  if (v.is_discarded() || !v.is_object()) return false;
  const size_t n = v.size();
  // Every value is the literal 1: one ':' per member written.
  const size_t written = static_cast<size_t>(std::count(text.begin(), text.end(), ':'));
  if (schema.contains("minProperties") &&
      (written_min ? written : n) < schema["minProperties"].get<size_t>())
    return false;
  if (schema.contains("maxProperties") && n > schema["maxProperties"].get<size_t>()) return false;
  if (schema.contains("required"))
    for (const auto& r : schema["required"])
      if (!v.contains(r.get<std::string>())) return false;
  for (const auto& [k, val] : v.items()) {
    // The pattern of the schemas below, "^x$", takes only the key x.
    const bool listed = (schema.contains("properties") && schema["properties"].contains(k)) ||
                        (schema.contains("patternProperties") && k == "x");
    if (!listed && schema.contains("additionalProperties") &&
        schema["additionalProperties"] == false)
      return false;
  }
  return true;
}

void Explore(const std::string& schema_text, bool satisfiable = true) {
  const auto schema = nlohmann::ordered_json::parse(schema_text);
  const CompiledSchema c = Compile(schema_text);
  const bool written_min = !c.unenforced.empty();
  for (const auto& u : c.unenforced) EXPECT_EQ(u.ToString(), "minProperties@") << schema_text;
  std::vector<std::pair<std::string, GrammarMatcher>> level;
  level.emplace_back("", GrammarMatcher(&c.grammar));
  size_t complete = 0;
  while (!level.empty()) {
    std::vector<std::pair<std::string, GrammarMatcher>> next;
    for (auto& [text, m] : level) {
      if (m.CanEnd()) {
        ++complete;
        EXPECT_TRUE(Valid(schema, text, written_min))
            << schema_text << ": wrongly accepts " << text;
      }
      if (text.size() >= kLen) continue;
      // Whole tokens keep the space small; each byte's state is checked.
      for (const char* tok : kTokens) {
        GrammarMatcher n;
        n.CopyFrom(m);
        bool ok = true;
        for (const char* ch = tok; *ch && ok; ++ch) {
          ok = n.Advance(static_cast<uint8_t>(*ch));
          int budget = 2000;
          if (ok) {
            ASSERT_TRUE(CanComplete(n, 30, &budget))
                << schema_text << ": dead end after " << text << std::string(tok, ch + 1);
          }
        }
        if (ok) next.emplace_back(text + tok, std::move(n));
      }
    }
    level = std::move(next);
  }
  EXPECT_EQ(complete > 0, satisfiable) << schema_text;
}

TEST(SchemaProps, ExhaustiveNoDeadEndNoWrongAccept) {
  const std::string props = R"("properties":{"a":{"const":1},"b":{"const":1},"c":{"const":1}})";
  const std::vector<std::string> extras = {
      "", R"(,"additionalProperties":{"const":1})",
      R"(,"patternProperties":{"^x$":{"const":1}},"additionalProperties":false)"};
  for (const std::string bounds :
       {R"("minProperties":1)", R"("minProperties":2)", R"("minProperties":3)",
        R"("minProperties":4)", R"("maxProperties":0)", R"("maxProperties":1)",
        R"("maxProperties":2)", R"("minProperties":2,"maxProperties":2)",
        R"("minProperties":1,"maxProperties":1)", R"("minProperties":3,"maxProperties":4)"}) {
    for (const std::string& req : {std::string(), std::string(R"(,"required":["b"])")}) {
      for (const std::string& extra : extras) {
        // Unsatisfiable: b required but no member allowed; 4 members from 3
        // listed keys and none extra.
        const bool none = (bounds == R"("maxProperties":0)" && !req.empty()) ||
                          (bounds == R"("minProperties":4)" && extra.empty());
        Explore(R"({"type":"object",)" + props + "," + bounds + req + extra + "}", !none);
      }
    }
  }
  Explore(R"({"type":"object","additionalProperties":{"const":1},"minProperties":1,
      "maxProperties":2})");
}

}  // namespace
}  // namespace brisk
