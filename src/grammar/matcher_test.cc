// Compiler + matcher: for each supported keyword, instances that must be
// accepted and instances that must be rejected (written for this project, in
// the style of JSON-Schema-Test-Suite, restricted to the compact output form
// the grammar fixes).
#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/constraint.h"
#include "grammar/schema_compiler.h"

namespace brisk {
namespace {

struct Case {
  const char* schema;
  std::vector<const char*> valid;
  std::vector<const char*> invalid;
};

// Whole text accepted: every byte advances and the end is allowed.
bool Accepts(const CompiledSchema& c, std::string_view text) {
  GrammarMatcher m(&c.grammar);
  for (char ch : text)
    if (!m.Advance(static_cast<uint8_t>(ch))) return false;
  return m.CanEnd();
}

void Check(const Case& c) {
  auto compiled = CompileJsonSchemaText(c.schema);
  ASSERT_TRUE(compiled.ok()) << c.schema << ": " << compiled.status().message();
  for (const char* v : c.valid)
    EXPECT_TRUE(Accepts(*compiled, v)) << c.schema << " should accept " << v;
  for (const char* v : c.invalid)
    EXPECT_FALSE(Accepts(*compiled, v)) << c.schema << " should reject " << v;
}

TEST(MatcherTest, Types) {
  Check({R"({"type":"string"})",
         {R"("")", R"("abc")", R"("a\"b\\c\n\u00e9\/")"},
         {"1", "null", R"("abc)", R"("a"b")", "\"a\nb\"", R"("\x")", R"( "a")", R"("a" )"}});
  Check({R"({"type":"integer"})",
         {"0", "-0", "12", "-1234567890123"},
         {"01", "1.0", "1e3", "-", "+1", "", "1 ", "a"}});
  Check({R"({"type":"number"})",
         {"0", "-0.5", "1.25", "1e10", "1E-3", "-2.5e+7", "0.0"},
         {"01", ".5", "1.", "1e", "1e+", "--1", "0x1", "NaN", "Infinity"}});
  Check({R"({"type":"boolean"})", {"true", "false"}, {"tru", "True", "1", "null"}});
  Check({R"({"type":"null"})", {"null"}, {"nul", "None", "0"}});
  Check({R"({"type":["string","null"]})", {R"("x")", "null"}, {"1", "true"}});
  Check({R"({"type":"integer","nullable":true})", {"3", "null"}, {R"("3")"}});
  Check({R"(true)", {"1", R"({"a":[1,{"b":null}]})", R"("s")"}, {"{", "[1,]"}});
  Check({R"(false)", {}, {"1", "null", R"("")"}});
  Check({R"({})", {"1", "[]", R"({"k":"v"})"}, {R"({"k" : 1})", "[1, 2]"}});
}

TEST(MatcherTest, Utf8AndEscapes) {
  Check({R"({"type":"string"})",
         {"\"\xc3\xa9\"", "\"\xe2\x82\xac\"", "\"\xf0\x9f\x98\x80\"", R"("\u00e9\uFFFF")"},
         {"\"\xc3\"", "\"\xc0\xaf\"", "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"",
          "\"\xf4\x90\x80\x80\"", "\"\xff\"", R"("\ud83d\ude00")", R"("\u12")", R"("\u12g4")"}});
}

TEST(MatcherTest, StringLength) {
  Check({R"({"type":"string","minLength":2,"maxLength":3})",
         {R"("ab")", R"("abc")", "\"\xc3\xa9\xc3\xa9\"", R"("a\nb")"},
         {R"("a")", R"("abcd")", R"("")", "\"\xc3\xa9\""}});
}

TEST(MatcherTest, NumberBounds) {
  Check({R"({"type":"integer","minimum":-5,"maximum":120})",
         {"-5", "0", "7", "99", "120", "-0"},
         {"-6", "121", "1000", "-10", "5.5"}});
  Check({R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})",
         {"1", "9"},
         {"0", "10", "-1"}});
  Check({R"({"type":"number","minimum":0.5,"maximum":2.25})",
         {"0.5", "1", "2.25", "2.2", "0.75"},
         {"0.4", "2.26", "3", "-1", "0", "2.250001"}});
  Check({R"({"type":"number","exclusiveMaximum":1})", {"0.999", "-3"}, {"1", "1.0", "2"}});
  Check({R"({"type":"number","minimum":0,"exclusiveMinimum":true})",
         {"0.1", "5"},
         {"0", "-0", "-1"}});
  Check({R"({"type":"integer","minimum":100})", {"100", "12345"}, {"99", "-100", "0"}});
}

TEST(MatcherTest, EnumAndConst) {
  Check({R"({"enum":["red","green",1,12,null,{"a":1}]})",
         {R"("red")", R"("green")", "1", "12", "null", R"({"a":1})"},
         {R"("blue")", "2", "123", R"("re")", "true"}});
  Check({R"({"const":"x"})", {R"("x")"}, {R"("y")", R"("xx")"}});
  Check({R"({"type":"string","enum":["a",1]})", {R"("a")"}, {"1"}});
}

TEST(MatcherTest, ObjectPropertiesRequiredOrder) {
  const char* s = R"({"type":"object","properties":{"name":{"type":"string"},
      "age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},
      "required":["name","tags"],"additionalProperties":false})";
  Check({s,
         {R"({"name":"a","tags":[]})", R"({"name":"a","age":3,"tags":["x","y"]})"},
         {R"({"name":"a"})", R"({"tags":[],"name":"a"})", R"({"name":"a","tags":[],"x":1})",
          R"({"name":1,"tags":[]})", R"({"name":"a","age":3,"age":4,"tags":[]})", "{}",
          R"({"name":"a", "tags":[]})", R"({"nam":"a","tags":[]})"}});
}

TEST(MatcherTest, AdditionalProperties) {
  Check({R"({"type":"object","properties":{"a":{"type":"integer"}},
      "additionalProperties":{"type":"string"}})",
         {"{}", R"({"a":1})", R"({"a":1,"b":"x","c":"y"})", R"({"b":"x"})", R"({"ab":"x"})"},
         {R"({"b":1})", R"({"b":"x","a":1})", R"({"a":"x"})"}});
  Check({R"({"type":"object","additionalProperties":true})", {"{}", R"({"x":[1,{}]})"}, {"[]"}});
  // Default (strict_defaults): no extra members.
  Check({R"({"type":"object","properties":{"a":{}}})", {"{}", R"({"a":null})"}, {R"({"b":1})"}});
}

TEST(MatcherTest, Arrays) {
  Check({R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})",
         {"[1]", "[1,2,3]"},
         {"[]", "[1,2,3,4]", "[1,]", R"(["a"])", "[1 ,2]"}});
  Check({R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]})",
         {"[]", R"(["a"])", R"(["a",1])"},
         {R"(["a",1,2])", "[1]"}});
  Check({R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"null"}})",
         {R"(["a",null,null])"},
         {R"(["a",1])"}});
  Check({R"({"type":"array","items":[{"type":"string"}],"additionalItems":false})",
         {R"(["a"])"},
         {R"(["a","b"])"}});
}

TEST(MatcherTest, AnyOfOneOfAllOf) {
  Check({R"({"anyOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                      {"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}]})",
         {R"({"a":1})", R"({"a":"x"})"},
         {R"({"a":null})", "{}"}});
  Check({R"({"oneOf":[{"type":"integer"},{"type":"string"}]})", {"1", R"("s")"}, {"null"}});
  Check({R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                      {"properties":{"b":{"type":"string"}},"required":["b"]}]})",
         {R"({"a":1,"b":"x"})"},
         {R"({"a":1})", R"({"b":"x"})"}});
  Check({R"({"allOf":[{"type":"integer","minimum":0},{"maximum":5}]})", {"0", "5"}, {"6", "-1"}});
  Check({R"({"type":"object","properties":{"k":{"type":"string"}},"required":["k"],
            "anyOf":[{"properties":{"k":{"maxLength":1}}},{"properties":{"k":{"minLength":3}}}]})",
         {R"({"k":"a"})", R"({"k":"abc"})"},
         {R"({"k":"ab"})"}});
}

TEST(MatcherTest, RefsAndRecursion) {
  const char* tree = R"({"$defs":{"node":{"type":"object","properties":{
      "v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["v"]}},"$ref":"#/$defs/node"})";
  Check({tree,
         {R"({"v":1})", R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]})"},
         {R"({"v":1,"kids":[{}]})", R"({"v":1,"kids":[{"v":"x"}]})"}});
  Check({R"({"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
      "required":["next"]})",
         {R"({"next":null})", R"({"next":{"next":null}})"},
         {R"({"next":{}})"}});
}

TEST(MatcherTest, KeysWithEscapes) {
  Check({R"({"type":"object","properties":{"a\"b":{"type":"integer"},"é":{"type":"integer"}},
            "additionalProperties":{"type":"integer"}})",
         {R"({"a\"b":1})", "{\"\xc3\xa9\":2}", R"({"a\\b":3})", R"({"x\ny":3})"},
         {R"({"a\u0022b":1})", R"({"x\/y":1})", R"({"a\"b":"s"})"}});
}

TEST(MatcherTest, JsonObjectMode) {
  CompiledSchema c = CompileAnyJsonObject();
  EXPECT_TRUE(Accepts(c, "{}"));
  EXPECT_TRUE(Accepts(c, R"({"a":[1,2.5,{"b":null}],"c":"d"})"));
  EXPECT_FALSE(Accepts(c, "[]"));
  EXPECT_FALSE(Accepts(c, "1"));
  EXPECT_FALSE(Accepts(c, R"({"a":1}{)"));
}

TEST(MatcherTest, NoDeadEnds) {
  // Every accepted prefix of a valid instance has at least one accepted next
  // byte or can end.
  auto c = CompileJsonSchemaText(R"({"type":"object","properties":{
      "n":{"type":"integer","minimum":10,"maximum":19},"s":{"type":"string","maxLength":2}},
      "required":["n","s"]})");
  ASSERT_TRUE(c.ok());
  GrammarMatcher m(&c->grammar);
  for (char ch : std::string(R"({"n":15,"s":"ab"})")) {
    ASSERT_TRUE(m.Advance(static_cast<uint8_t>(ch)));
    bool any = m.CanEnd();
    for (int b = 0; b < 256 && !any; ++b) {
      GrammarMatcher copy;
      copy.CopyFrom(m);
      any = copy.Advance(static_cast<uint8_t>(b));
    }
    EXPECT_TRUE(any);
  }
  EXPECT_TRUE(m.CanEnd());
  EXPECT_TRUE(m.Finished());
  // After "1" a digit must follow (10..19): "," is refused, and so is "190".
  GrammarMatcher n(&c->grammar);
  ASSERT_TRUE(n.AdvanceBytes(R"({"n":1)"));
  GrammarMatcher copy;
  copy.CopyFrom(n);
  EXPECT_FALSE(copy.Advance(','));
  EXPECT_TRUE(copy.Advance('9'));
  EXPECT_FALSE(n.AdvanceBytes("90"));
  EXPECT_TRUE(n.AdvanceBytes("2,"));
}

TEST(SchemaCompilerTest, ReportsUnenforcedKeywords) {
  auto c = CompileJsonSchemaText(R"({"type":"object","properties":{
      "zip":{"type":"string","pattern":"^(?!0)[0-9]{5}$"},"d":{"type":"string","format":"color"},
      "x":{"oneOf":[{"type":"integer"},{"type":"number","multipleOf":0.5}]}},
      "propertyNames":{"maxLength":3},"title":"t","description":"d","x-custom":1})");
  ASSERT_TRUE(c.ok());
  std::vector<std::string> got;
  for (const auto& u : c->unenforced) got.push_back(u.ToString());
  const std::vector<std::string> want = {"propertyNames@", "pattern@/properties/zip",
                                         "format@/properties/d", "oneOf@/properties/x",
                                         "multipleOf@/properties/x/oneOf/1"};
  EXPECT_EQ(got, want);
}

TEST(SchemaCompilerTest, RejectsNonSchemas) {
  EXPECT_FALSE(CompileJsonSchemaText("{").ok());
  EXPECT_FALSE(CompileJsonSchemaText(R"({"type":"strin"})").ok());
  EXPECT_FALSE(CompileJsonSchemaText(R"({"$ref":"#/$defs/missing"})").ok());
  EXPECT_FALSE(CompileJsonSchemaText(R"({"type":"object","required":"a"})").ok());
  EXPECT_FALSE(CompileJsonSchemaText("3").ok());
  // Found by gateway_parsers_fuzz: escapes that are not hex and indices that
  // do not fit were thrown as std::invalid_argument / out_of_range.
  EXPECT_FALSE(CompileJsonSchemaText(R"({"$defs":{"a":{}},"$ref":"#/$defs%%%/a"})").ok());
  EXPECT_FALSE(CompileJsonSchemaText(R"({"$defs":{"a":{}},"$ref":"#/$defs/%zz"})").ok());
  EXPECT_FALSE(
      CompileJsonSchemaText(R"({"anyOf":[{}],"$ref":"#/anyOf/99999999999999999999999"})").ok());
  EXPECT_TRUE(CompileJsonSchemaText(R"({"$defs":{"a b":{}},"$ref":"#/$defs/a%20b"})").ok());
  // A self-referencing alias compiles and matches nothing.
  auto c = CompileJsonSchemaText(R"({"$ref":"#"})");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(Accepts(*c, "1"));
}

// ConstraintSpec::separator: one or more values, the separator between
// them, no brackets (several tool calls under tool_choice "auto").
TEST(MatcherTest, BareSequenceWithSeparator) {
  auto c = CompileConstraint({ConstraintSpec::Kind::kJsonSchema,
                              R"({"type":"object","properties":{"n":{"type":"integer"}},
                                  "required":["n"],"additionalProperties":false})",
                              "\n--\n"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  const CompiledSchema& s = (*c)->compiled;
  for (const char* ok :
       {R"({"n":1})", "{\"n\":1}\n--\n{\"n\":22}", "{\"n\":1}\n--\n{\"n\":2}\n--\n{\"n\":3}"})
    EXPECT_TRUE(Accepts(s, ok)) << ok;
  for (const char* bad :
       {"", R"([{"n":1}])", R"({"n":1},{"n":2})", "{\"n\":1}\n--\n", "{\"n\":1}\n-",
        "{\"n\":1}\n--\n\n{\"n\":2}", "{\"n\":1}\n--\n[", "\n--\n{\"n\":1}", R"({"n":1} )"})
    EXPECT_FALSE(Accepts(s, bad)) << bad;
  // After a value: the end, or the separator (never Finished).
  GrammarMatcher m(&s.grammar);
  ASSERT_TRUE(m.AdvanceBytes(R"({"n":1})"));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.Finished());
  ASSERT_TRUE(m.AdvanceBytes("\n-"));
  EXPECT_FALSE(m.CanEnd());
  EXPECT_FALSE(m.Advance('{'));
  // Same schema, other separator: another cache entry.
  ConstraintCache cache;
  bool hit = true;
  ASSERT_TRUE(cache.Get({ConstraintSpec::Kind::kJsonSchema, "{}", ";"}, &hit).ok());
  ASSERT_TRUE(cache.Get({ConstraintSpec::Kind::kJsonSchema, "{}", ""}, &hit).ok());
  EXPECT_FALSE(hit);
  ASSERT_TRUE(cache.Get({ConstraintSpec::Kind::kJsonSchema, "{}", ";"}, &hit).ok());
  EXPECT_TRUE(hit);
}

// separator_end: the text may also end after the separator's closing tag
// (a call's "\n</tool_call>"), and nowhere else inside the separator.
TEST(MatcherTest, BareSequenceMayEndAfterTheClosingTag) {
  ConstraintSpec spec{ConstraintSpec::Kind::kJsonSchema,
                      R"({"type":"object","properties":{"n":{"type":"integer"}},
                          "required":["n"],"additionalProperties":false})",
                      "\n</c>\n<c>\n"};
  spec.separator_end = 5;  // "\n</c>"
  auto c = CompileConstraint(spec);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const CompiledSchema& s = (*c)->compiled;
  for (const char* ok : {R"({"n":1})", "{\"n\":1}\n</c>", "{\"n\":1}\n</c>\n<c>\n{\"n\":2}",
                         "{\"n\":1}\n</c>\n<c>\n{\"n\":2}\n</c>"})
    EXPECT_TRUE(Accepts(s, ok)) << ok;
  for (const char* bad :
       {"{\"n\":1}\n</c", "{\"n\":1}\n</c>\n", "{\"n\":1}\n</c>\n<c>\n", "{\"n\":1}\n</c>\n</c>"})
    EXPECT_FALSE(Accepts(s, bad)) << bad;
  GrammarMatcher m(&s.grammar);
  ASSERT_TRUE(m.AdvanceBytes("{\"n\":1}\n</c>"));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.Finished());  // the next call's tag may follow
  // The end position is part of the cache key.
  ConstraintCache cache;
  bool hit = true;
  ASSERT_TRUE(cache.Get(spec, &hit).ok());
  spec.separator_end = 0;
  ASSERT_TRUE(cache.Get(spec, &hit).ok());
  EXPECT_FALSE(hit);
}

}  // namespace
}  // namespace brisk
