// Jinja runtime values with Python semantics: truthiness, ==, <, str() and
// repr() text, dict key order, JSON in and out, 64-bit integer overflow as
// an error, and the UTF-8 helpers strings are measured with. Expected texts
// are what Python jinja2 prints for the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/parser.h"
#include "jinja/utf8.h"
#include "jinja/value.h"

namespace brisk::jinja {
namespace {

using OJson = nlohmann::ordered_json;

// Renders `source` with `context` (a JSON object); errors come back as
// "ERROR <status>".
std::string Render(std::string_view source, const OJson& context = OJson::object()) {
  auto tmpl = ParseTemplate(source);
  if (!tmpl.ok()) return "PARSE " + tmpl.status().ToString();
  auto ctx = Value::FromJson(context);
  if (!ctx.ok()) return "CONTEXT " + ctx.status().ToString();
  Interpreter interp(RenderLimits{});
  auto out = interp.Render(**tmpl, *ctx);
  if (!out.ok()) return "ERROR " + out.status().ToString();
  return *out;
}

Value L(std::vector<Value> items) { return Value::List(std::move(items)); }
Value T(std::vector<Value> items) { return Value::List(std::move(items), /*is_tuple=*/true); }
Value D(std::vector<std::pair<Value, Value>> items) {
  DictData d;
  d.items = std::move(items);
  return Value::Dict(std::move(d));
}

// ------------------------------------------------------------------ truthiness

TEST(JinjaValueTest, TruthinessFollowsPython) {
  EXPECT_FALSE(Value().Truthy());  // Undefined
  EXPECT_FALSE(Value::None().Truthy());
  EXPECT_FALSE(Value(false).Truthy());
  EXPECT_TRUE(Value(true).Truthy());
  EXPECT_FALSE(Value(0).Truthy());
  EXPECT_TRUE(Value(-1).Truthy());
  EXPECT_FALSE(Value(0.0).Truthy());
  EXPECT_FALSE(Value(-0.0).Truthy());
  EXPECT_TRUE(Value(std::nan("")).Truthy());
  EXPECT_FALSE(Value("").Truthy());
  EXPECT_TRUE(Value("0").Truthy());
  EXPECT_FALSE(L({}).Truthy());
  EXPECT_TRUE(L({Value(0)}).Truthy());
  EXPECT_FALSE(D({}).Truthy());
  EXPECT_TRUE(D({{Value("k"), Value::None()}}).Truthy());
  EXPECT_TRUE(Value::Namespace({}).Truthy());
  // The same through templates.
  EXPECT_EQ(Render("{% if 0.0 %}a{% endif %}{% if '0' %}b{% endif %}{% if [0] %}c{% endif %}"
                   "{% if {} %}d{% endif %}{% if namespace() %}e{% endif %}"
                   "{% if range %}f{% endif %}{% if -0.0 %}g{% endif %}{% if nope %}h{% endif %}"),
            "bcef");
}

TEST(JinjaValueTest, TypeNames) {
  EXPECT_STREQ(Value().TypeName(), "Undefined");
  EXPECT_STREQ(Value::None().TypeName(), "NoneType");
  EXPECT_STREQ(Value(true).TypeName(), "bool");
  EXPECT_STREQ(Value(1).TypeName(), "int");
  EXPECT_STREQ(Value(1.5).TypeName(), "float");
  EXPECT_STREQ(Value("s").TypeName(), "str");
  EXPECT_STREQ(L({}).TypeName(), "list");
  EXPECT_STREQ(T({}).TypeName(), "tuple");
  EXPECT_STREQ(D({}).TypeName(), "dict");
}

// ------------------------------------------------------------------ equality

TEST(JinjaValueTest, EqualityFollowsPython) {
  EXPECT_TRUE(Equals(Value(1), Value(1.0)));
  EXPECT_TRUE(Equals(Value(true), Value(1)));
  EXPECT_FALSE(Equals(Value(true), Value(2)));
  EXPECT_FALSE(Equals(Value("1"), Value(1)));
  EXPECT_TRUE(Equals(Value("a"), Value(std::string("a"))));
  EXPECT_FALSE(Equals(Value(std::nan("")), Value(std::nan(""))));
  EXPECT_TRUE(Equals(Value::None(), Value::None()));
  EXPECT_FALSE(Equals(Value(), Value::None()));
  EXPECT_TRUE(Equals(L({Value(1), Value("x")}), L({Value(1.0), Value("x")})));
  EXPECT_FALSE(Equals(L({Value(1)}), L({Value(1), Value(2)})));
  // A list never equals a tuple.
  EXPECT_FALSE(Equals(L({Value(1)}), T({Value(1)})));
  // Dicts compare as mappings: key order does not matter.
  EXPECT_TRUE(Equals(D({{Value("a"), Value(1)}, {Value("b"), Value(2)}}),
                     D({{Value("b"), Value(2)}, {Value("a"), Value(1)}})));
  EXPECT_FALSE(Equals(D({{Value("a"), Value(1)}}), D({{Value("a"), Value(2)}})));
  // Namespaces compare by identity.
  Value ns = Value::Namespace({});
  Value copy = ns;
  EXPECT_TRUE(Equals(ns, copy));
  EXPECT_FALSE(Equals(ns, Value::Namespace({})));
  EXPECT_EQ(Render("{{ 1 == 1.0 }} {{ true == 1 }} {{ '1' == 1 }} {{ [1] == (1,) }} "
                   "{{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }} {{ nope == none }}"),
            "True True False False True False");
}

TEST(JinjaValueTest, OrderingFollowsPython) {
  EXPECT_TRUE(*Less(Value(1), Value(2.5)));
  EXPECT_FALSE(*Less(Value(1), Value(true)));
  EXPECT_TRUE(*Less(Value("B"), Value("a")));  // code point order
  EXPECT_TRUE(*Less(L({Value(1), Value(2)}), L({Value(1), Value(3)})));
  EXPECT_TRUE(*Less(L({Value(1)}), L({Value(1), Value(0)})));
  auto bad = Less(Value(1), Value("a"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "'<' not supported between instances of 'int' and 'str'");
  EXPECT_FALSE(Less(Value::None(), Value::None()).ok());
}

// ------------------------------------------------------------------ printing

TEST(JinjaValueTest, StrAndReprFollowPython) {
  EXPECT_EQ(Value().Str(), "");
  EXPECT_EQ(Value().Repr(), "Undefined");
  EXPECT_EQ(Value::None().Str(), "None");
  EXPECT_EQ(Value(true).Str(), "True");
  EXPECT_EQ(Value(false).Str(), "False");
  EXPECT_EQ(Value(int64_t{-42}).Str(), "-42");
  EXPECT_EQ(Value("it's").Str(), "it's");
  EXPECT_EQ(Value("it's").Repr(), "\"it's\"");
  EXPECT_EQ(Value("say \"hi\"").Repr(), "'say \"hi\"'");
  EXPECT_EQ(Value("it's \"x\"").Repr(), "'it\\'s \"x\"'");
  EXPECT_EQ(Value("a\nb\t\\\x01\x7f").Repr(), "'a\\nb\\t\\\\\\x01\\x7f'");
  EXPECT_EQ(Value("\xC3\xA9").Repr(), "'\xC3\xA9'");  // non-ASCII prints as is
  EXPECT_EQ(L({Value("a"), Value::None(), Value(true), Value(1.5), L({}), D({})}).Str(),
            "['a', None, True, 1.5, [], {}]");
  EXPECT_EQ(T({Value(1)}).Str(), "(1,)");
  EXPECT_EQ(T({Value(1), Value("a")}).Str(), "(1, 'a')");
  EXPECT_EQ(T({}).Str(), "()");
  EXPECT_EQ(D({{Value("k"), Value("v")}, {Value(1), Value::None()}}).Str(), "{'k': 'v', 1: None}");
  DictData attrs;
  attrs.Set(Value("a"), Value(1));
  EXPECT_EQ(Value::Namespace(std::move(attrs)).Str(), "<Namespace {'a': 1}>");
}

TEST(JinjaValueTest, FloatsPrintLikePythonRepr) {
  EXPECT_EQ(FormatFloat(1.0), "1.0");
  EXPECT_EQ(FormatFloat(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatFloat(1e16), "1e+16");
  EXPECT_EQ(FormatFloat(1e15), "1000000000000000.0");
  EXPECT_EQ(FormatFloat(1e-4), "0.0001");
  EXPECT_EQ(FormatFloat(1e-5), "1e-05");
  EXPECT_EQ(FormatFloat(-0.0), "-0.0");
  EXPECT_EQ(FormatFloat(123456789.125), "123456789.125");
  EXPECT_EQ(FormatFloat(2.5e-9), "2.5e-09");
  EXPECT_EQ(FormatFloat(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(FormatFloat(std::pow(2.0, 60)), "1.152921504606847e+18");
  EXPECT_EQ(FormatFloat(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(FormatFloat(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(FormatFloat(std::nan("")), "nan");
}

// ------------------------------------------------------------------ dict key order

TEST(JinjaValueTest, DictsKeepInsertionOrder) {
  DictData d;
  d.Set(Value("b"), Value(1));
  d.Set(Value("a"), Value(2));
  d.Set(Value("b"), Value(3));  // replaces in place
  Value v = Value::Dict(std::move(d));
  EXPECT_EQ(v.Str(), "{'b': 3, 'a': 2}");
  ASSERT_NE(v.as_dict().Find(std::string_view("a")), nullptr);
  EXPECT_EQ(v.as_dict().Find(std::string_view("a"))->as_int(), 2);
  EXPECT_EQ(v.as_dict().Find(std::string_view("zz")), nullptr);
  // Non-string keys compare by value: 1 and 1.0 are the same key.
  DictData n;
  n.Set(Value(1), Value("int"));
  n.Set(Value(1.0), Value("float"));
  ASSERT_EQ(n.items.size(), 1u);
  EXPECT_EQ(n.Find(Value(true))->as_string(), "float");

  // Literal dicts and JSON objects keep their order; a repeated literal key
  // keeps its first position and its last value.
  EXPECT_EQ(Render("{{ {'b': 1, 'a': 2} }} {{ {'a': 1, 'b': 2, 'a': 3} }}"),
            "{'b': 1, 'a': 2} {'a': 3, 'b': 2}");
  OJson ctx = {{"d", {{"z", 1}, {"y", 2}}}};
  EXPECT_EQ(
      Render("{{ d }} {% for k in d %}{{ k }}{% endfor %} {{ d|tojson }} {{ d.keys()|list }}", ctx),
      "{'z': 1, 'y': 2} zy {\"z\": 1, \"y\": 2} ['z', 'y']");
}

TEST(JinjaValueTest, FromJsonMapsTypesAndKeepsOrder) {
  auto v = Value::FromJson(
      OJson::parse(R"({"s": "x", "i": -3, "f": 2.5, "b": true, "n": null, "l": [1, [2]],
                       "o": {"z": 0, "a": 1}})"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->Str(),
            "{'s': 'x', 'i': -3, 'f': 2.5, 'b': True, 'n': None, 'l': [1, [2]], "
            "'o': {'z': 0, 'a': 1}}");
  // Plain nlohmann::json sorts object keys before we see them.
  auto sorted = Value::FromJson(nlohmann::json::parse(R"({"z": 0, "a": 1})"));
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(sorted->Str(), "{'a': 1, 'z': 0}");
  // Unsigned integers past int64 become floats instead of wrapping.
  auto big = Value::FromJson(OJson(uint64_t{18446744073709551615u}));
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE(big->is_float());
  auto top = Value::FromJson(OJson(uint64_t{INT64_MAX}));
  ASSERT_TRUE(top.ok());
  EXPECT_TRUE(top->is_int());
  EXPECT_EQ(top->as_int(), INT64_MAX);
}

// `levels` arrays nested in each other.
OJson NestedArrays(int levels) {
  OJson j = OJson::array();
  for (int i = 1; i < levels; ++i) j = OJson::array({j});
  return j;
}

TEST(JinjaValueTest, NestingPastTheDepthCapIsAnError) {
  auto v = Value::FromJson(NestedArrays(kMaxValueDepth + 10));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  auto w = Value::FromJson(NestedArrays(kMaxValueDepth - 10));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->depth(), kMaxValueDepth - 10);
  EXPECT_EQ(Value(1).depth(), 0);
}

TEST(JinjaValueTest, NamespacesAreSharedByReference) {
  Value ns = Value::Namespace({});
  Value alias = ns;
  alias.namespace_attrs().Set(Value("x"), Value(1));
  ASSERT_NE(ns.namespace_attrs().Find(std::string_view("x")), nullptr);
  EXPECT_TRUE(L({ns}).contains_namespace());
  EXPECT_FALSE(L({Value(1)}).contains_namespace());
}

// ------------------------------------------------------------------ JSON out

TEST(JinjaValueTest, ToJsonIsPythonJsonDumps) {
  Value v = D({{Value("b"), Value("\xC3\xA9\xF0\x9F\x98\x80")},
               {Value("a"), L({Value(1), Value(2.5), Value::None(), Value(true)})},
               {Value("c"), Value("q\"\\\n\x01")}});
  std::string out;
  ASSERT_TRUE(ToJson(v, {}, 1 << 20, &out).ok());
  EXPECT_EQ(out,
            "{\"b\": \"\xC3\xA9\xF0\x9F\x98\x80\", \"a\": [1, 2.5, null, true], "
            "\"c\": \"q\\\"\\\\\\n\\u0001\"}");
  JsonOptions ascii;
  ascii.ensure_ascii = true;
  out.clear();
  ASSERT_TRUE(ToJson(Value("\xC3\xA9\xF0\x9F\x98\x80"), ascii, 1 << 20, &out).ok());
  EXPECT_EQ(out, "\"\\u00e9\\ud83d\\ude00\"");
  JsonOptions pretty;
  pretty.indent = "  ";
  pretty.item_separator = ",";
  pretty.sort_keys = true;
  out.clear();
  ASSERT_TRUE(
      ToJson(D({{Value("b"), L({})}, {Value("a"), L({Value(1)})}}), pretty, 1 << 20, &out).ok());
  EXPECT_EQ(out, "{\n  \"a\": [\n    1\n  ],\n  \"b\": []\n}");
  out.clear();
  ASSERT_TRUE(ToJson(L({Value(std::nan("")), Value(1e100)}), {}, 1 << 20, &out).ok());
  EXPECT_EQ(out, "[NaN, 1e+100]");
}

TEST(JinjaValueTest, ToJsonErrors) {
  std::string out;
  Status st = ToJson(L({Value()}), {}, 1 << 20, &out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "Object of type Undefined is not JSON serializable");
  out.clear();
  st = ToJson(D({{L({}), Value(1)}}), {}, 1 << 20, &out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  std::vector<Value> many(1000, Value("0123456789"));
  out.clear();
  st = ToJson(L(std::move(many)), {}, 100, &out);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
}

// ------------------------------------------------------------------ integers

TEST(JinjaValueTest, IntegerOverflowIsAnError) {
  const Value max(int64_t{INT64_MAX});
  const Value min(int64_t{INT64_MIN});
  const size_t cap = 1 << 20;
  for (auto [op, a, b] :
       std::vector<std::tuple<BinaryOp, Value, Value>>{{BinaryOp::kAdd, max, Value(1)},
                                                       {BinaryOp::kSub, min, Value(1)},
                                                       {BinaryOp::kMul, max, Value(2)},
                                                       {BinaryOp::kPow, Value(2), Value(63)},
                                                       {BinaryOp::kFloorDiv, min, Value(-1)}}) {
    auto r = ApplyBinary(op, a, b, cap);
    ASSERT_FALSE(r.ok()) << static_cast<int>(op);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), "integer overflow");
  }
  // Right at the edge is fine.
  auto edge = ApplyBinary(BinaryOp::kPow, Value(2), Value(62), cap);
  ASSERT_TRUE(edge.ok());
  EXPECT_EQ(edge->as_int(), int64_t{1} << 62);
  auto sum = ApplyBinary(BinaryOp::kAdd, Value(INT64_MAX - 1), Value(1), cap);
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->as_int(), INT64_MAX);
  // Through a template the error carries the position of the operator (or
  // of the filter's name); a literal past int64 is a syntax error.
  EXPECT_EQ(Render("x\n{{ 9223372036854775807 + 1 }}"),
            "ERROR INVALID_ARGUMENT: 2:24: integer overflow");
  EXPECT_EQ(Render("{{ 2 ** 63 }}"), "ERROR INVALID_ARGUMENT: 1:6: integer overflow");
  EXPECT_EQ(Render("{{ [9223372036854775807, 1]|sum }}"),
            "ERROR INVALID_ARGUMENT: 1:29: integer overflow");
  EXPECT_EQ(Render("{{ 9223372036854775808 }}"),
            "PARSE INVALID_ARGUMENT: 1:4: integer literal too large");
}

TEST(JinjaValueTest, ArithmeticFollowsPython) {
  EXPECT_EQ(Render("{{ 2 ** 62 }} {{ true + 1 }} {{ 1 + 2.5 }} {{ 7 // 2 }} {{ -7 // 2 }} "
                   "{{ -7 % 3 }} {{ 7 / 2 }}"),
            "4611686018427387904 2 3.5 3 -4 2 3.5");
  EXPECT_EQ(Render("{{ 1 // 0 }}"),
            "ERROR INVALID_ARGUMENT: 1:6: integer division or modulo by zero");
  EXPECT_EQ(Render("{{ 1 / 0 }}"), "ERROR INVALID_ARGUMENT: 1:6: division by zero");
}

// ------------------------------------------------------------------ UTF-8

TEST(JinjaUtf8Test, LengthOffsetsAndDecode) {
  EXPECT_EQ(Utf8Length("h\xC3\xA9llo"), 5u);
  EXPECT_EQ(Utf8Length(""), 0u);
  EXPECT_EQ(Utf8Length("\xFF\xFE"), 2u);  // each invalid byte counts alone
  EXPECT_EQ(Utf8Offsets("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"),
            (std::vector<size_t>{0, 1, 3, 6, 10}));
  size_t len = 0;
  EXPECT_EQ(Utf8Decode("\xE2\x82\xAC", 0, &len), 0x20ACu);
  EXPECT_EQ(len, 3u);
  EXPECT_EQ(Utf8Decode("\xE2\x82", 0, &len), 0xFFFDu);  // truncated
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(Utf8Decode("\xC3(", 0, &len), 0xFFFDu);  // bad continuation
  EXPECT_EQ(len, 1u);
}

TEST(JinjaUtf8Test, AppendRoundTrips) {
  for (uint32_t cp : {0x41u, 0x7Fu, 0x80u, 0xE9u, 0x7FFu, 0x800u, 0x20ACu, 0xFFFFu, 0x10000u,
                      0x1F600u, 0x10FFFFu}) {
    std::string s;
    AppendUtf8(cp, &s);
    size_t len = 0;
    EXPECT_EQ(Utf8Decode(s, 0, &len), cp);
    EXPECT_EQ(len, s.size());
  }
  std::string s;
  AppendUtf8(0x1F600, &s);
  EXPECT_EQ(s, "\xF0\x9F\x98\x80");
}

TEST(JinjaUtf8Test, PyStripUsesUnicodeWhitespace) {
  EXPECT_EQ(PyStrip(" \t\nx y\r\n", true, true), "x y");
  EXPECT_EQ(PyStrip("\xE3\x80\x80x\xC2\xA0", true, true), "x");  // U+3000, U+00A0
  EXPECT_EQ(PyStrip("  x  ", true, false), "x  ");
  EXPECT_EQ(PyStrip("  x  ", false, true), "  x");
  EXPECT_EQ(PyStrip("xxaxx", true, true, "x"), "a");
  EXPECT_EQ(PyStrip("\xC3\xA9"
                    "a\xC3\xA9",
                    true, true, "\xC3\xA9"),
            "a");
  // A broken trailing sequence is not whitespace and survives.
  EXPECT_EQ(PyStrip("a \xE3\x80", true, true), "a \xE3\x80");
  EXPECT_TRUE(IsPyWhitespace(0x2028));
  EXPECT_FALSE(IsPyWhitespace(0x200B));  // zero-width space is not whitespace
}

}  // namespace
}  // namespace brisk::jinja
