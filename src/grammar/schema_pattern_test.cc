// JSON Schema `pattern` and `format` through the compiler and the matcher:
// instances accepted and rejected, escapes and UTF-8, the search semantics
// of unanchored patterns (checked against std::regex's ECMAScript grammar
// on random strings), random walks that must never dead-end, and what is
// reported as not enforced.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "grammar/cfg.h"
#include "grammar/matcher.h"
#include "grammar/schema_compiler.h"
#include "grammar/string_pattern.h"

namespace brisk {
namespace {

bool Accepts(const CompiledSchema& c, std::string_view text) {
  GrammarMatcher m(&c.grammar);
  for (char ch : text)
    if (!m.Advance(static_cast<uint8_t>(ch))) return false;
  return m.CanEnd();
}

CompiledSchema MustCompile(const std::string& schema) {
  auto c = CompileJsonSchemaText(schema);
  EXPECT_TRUE(c.ok()) << schema << ": " << c.status().message();
  return c.ok() ? std::move(*c) : CompiledSchema{};
}

std::string PatternSchema(const std::string& pattern, const std::string& extra = "") {
  nlohmann::json s = {{"type", "string"}, {"pattern", pattern}};
  std::string text = s.dump();
  if (!extra.empty()) text.insert(text.size() - 1, "," + extra);
  return text;
}

// Instances are JSON texts of strings ("..." with escapes).
void Check(const std::string& schema, const std::vector<std::string>& valid,
           const std::vector<std::string>& invalid) {
  const CompiledSchema c = MustCompile(schema);
  EXPECT_TRUE(c.unenforced.empty()) << schema << ": " << c.unenforced[0].ToString();
  for (const auto& v : valid) EXPECT_TRUE(Accepts(c, v)) << schema << " should accept " << v;
  for (const auto& v : invalid) EXPECT_FALSE(Accepts(c, v)) << schema << " should reject " << v;
}

// UTF-8 to code points, for std::wregex (one wchar_t per character).
std::wstring Wide(const std::string& s) {
  std::wstring out;
  uint32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = DecodeUtf8Char(s, i, &cp);
    if (n == 0) return L"<invalid UTF-8>";
    out += static_cast<wchar_t>(cp);
    i += n;
  }
  return out;
}

std::vector<std::string> Unenforced(const std::string& schema) {
  std::vector<std::string> out;
  for (const auto& u : MustCompile(schema).unenforced) out.push_back(u.ToString());
  return out;
}

TEST(SchemaPatternTest, AnchorsAndSearch) {
  Check(PatternSchema("ab"), {R"("ab")", R"("xxaby")", R"("x\nab\n")"}, {R"("")", R"("a b")"});
  Check(PatternSchema("^ab"), {R"("ab")", R"("abc")"}, {R"("xab")"});
  Check(PatternSchema("ab$"), {R"("ab")", R"("xab")"}, {R"("abx")", R"("ab\n")"});
  Check(PatternSchema("^ab$"), {R"("ab")"}, {R"("abab")", R"("xab")", R"("abx")"});
  Check(PatternSchema("^a|b$"), {R"("ax")", R"("xb")"}, {R"("xa")", R"("bx")"});
  Check(PatternSchema(""), {R"("")", R"("anything")"}, {});
  Check(PatternSchema(R"(^\d{3}-\d{4}$)"), {R"("555-1234")"}, {R"("5551234")", R"("555-123")"});
  Check(PatternSchema(R"(^[A-Z]{2}\d+(\.\d+)?$)"), {R"("AB1")", R"("XY12.5")"},
        {R"("A1")", R"("AB1.")", R"("ab1")"});
  Check(PatternSchema(R"(a\$)"), {R"("a$")", R"("xa$y")"}, {R"("a")"});
  Check(PatternSchema(R"(^(?:x|y)*z{2,3}$)"), {R"("zz")", R"("xyxzzz")"},
        {R"("z")", R"("zzzz")", R"("xz")"});
  Check(PatternSchema("^(?<n>a|b)$"), {R"("a")"}, {R"("ab")"});
  Check(PatternSchema("(^[a-z]+$)|^$"), {R"("")", R"("abc")"}, {R"("ab1")"});
  // Many unanchored words: one shared "any text" around them keeps the
  // automaton small.
  std::string words;
  for (int i = 0; i < 200; ++i) words += (i ? "|W" : "W") + std::to_string(i);
  const CompiledSchema many = MustCompile(PatternSchema(words));
  EXPECT_TRUE(many.unenforced.empty());
  EXPECT_TRUE(Accepts(many, R"("xW199y")"));
  EXPECT_FALSE(Accepts(many, R"("W")"));
  EXPECT_LT(many.grammar.patterns.at(0).num_states(), 2000u);
}

TEST(SchemaPatternTest, EscapedCharacters) {
  // Characters JSON must escape are produced (and accepted) escaped only.
  Check(PatternSchema(R"(^a"b$)"), {R"("a\"b")"}, {R"("a"b")", R"("a\u0022b")"});
  Check(PatternSchema(R"(^\\+$)"), {R"("\\")", R"("\\\\")"}, {R"("\")", R"("\u005c")"});
  Check(PatternSchema(R"(^a\nb\t$)"), {R"("a\nb\t")"}, {"\"a\nb\t\"", R"("a\u000ab\t")"});
  Check(PatternSchema(R"(^[\x00-\x1f]$)"),
        {R"("\u0000")", R"("\u0001")", R"("\b")", R"("\f")", R"("\r")", R"("\u001f")"},
        {R"("\u0008")", R"("\u001F")", R"(" ")", "\"\x01\""});
  Check(PatternSchema(R"(^/$)"), {R"("/")"}, {R"("\/")"});
  Check(PatternSchema(R"(^[^a]$)"), {R"("\"")", R"("\\")", R"("\n")", R"("é")", R"("😀")"},
        {R"("a")", R"("")", R"("bb")"});
}

TEST(SchemaPatternTest, Utf8) {
  Check(PatternSchema("^é+$"), {R"("é")", R"("ééé")"}, {R"("e")", R"("\u00e9")", R"("")"});
  Check(PatternSchema("^[α-ω]{2}$"), {R"("αω")", R"("λμ")"}, {R"("α")", R"("αΩ")", R"("ab")"});
  Check(PatternSchema("^.{3}$"), {R"("a€😀")", R"("\"\\\t")"}, {R"("ab")", R"("a\nb")"});
  Check(PatternSchema(R"(^\u20ac\d$)"), {R"("€5")"}, {R"("€")", R"("E5")"});
  // ECMA-262 \s takes in the Unicode spaces, `.` excludes \r and U+2028.
  Check(PatternSchema(R"(^\s$)"), {R"(" ")", "\"\xC2\xA0\"", R"("\n")"}, {R"("x")"});
  Check(PatternSchema("^.$"), {R"("x")"}, {R"("\r")", "\"\xE2\x80\xA8\""});
}

TEST(SchemaPatternTest, LengthsCombine) {
  Check(PatternSchema("^a*$", R"("minLength":2,"maxLength":3)"), {R"("aa")", R"("aaa")"},
        {R"("a")", R"("aaaa")"});
  // Characters, not bytes: an escape and a 4-byte character count one each.
  Check(PatternSchema(R"(^[\s\S]*$)", R"("maxLength":2)"), {R"("\n😀")", R"("")"}, {R"("\n😀x")"});
  Check(PatternSchema("x", R"("minLength":3)"), {R"("xab")", R"("abx")"}, {R"("x")", R"("ax")"});
  // Nothing fits both: never.
  Check(PatternSchema("^a$", R"("minLength":2)"), {}, {R"("a")", R"("aa")"});
  Check(PatternSchema("^a{5}$", R"("maxLength":4)"), {}, {R"("aaaa")", R"("aaaaa")"});
  // A long maxLength costs nothing (no counter in the states).
  Check(PatternSchema(R"(^[a-z]+(-[a-z]+)*$)", R"("minLength":1,"maxLength":100000)"), {R"("a-b")"},
        {R"("")", R"("a-")"});
  // Lengths whose path lengths are not an interval: (aa)* with 3..5 chars is "aaaa" only.
  Check(PatternSchema("^(aa)*$", R"("minLength":3,"maxLength":5)"), {R"("aaaa")"},
        {R"("aa")", R"("aaa")", R"("aaaaa")", R"("aaaaaa")"});
}

TEST(SchemaPatternTest, PatternInsideObjects) {
  const std::string schema =
      R"({"type":"object","properties":{"zip":{"type":"string","pattern":"^\\d{5}$"},)"
      R"("tags":{"type":"array","items":{"type":"string","pattern":"^#"}}},"required":["zip"]})";
  Check(schema, {R"({"zip":"12345"})", R"({"zip":"12345","tags":["#a","#"]})"},
        {R"({"zip":"1234"})", R"({"zip":"12345","tags":["a"]})"});
}

TEST(SchemaPatternTest, Formats) {
  const auto fmt_schema = [](const char* f) {
    return std::string(R"({"type":"string","format":")") + f + "\"}";
  };
  Check(fmt_schema("date"), {R"("2024-02-29")", R"("2000-02-29")", R"("1999-12-31")"},
        {R"("2023-02-29")", R"("1900-02-29")", R"("2024-04-31")", R"("2024-13-01")",
         R"("24-01-01")", R"("2024-1-01")"});
  Check(fmt_schema("time"), {R"("23:59:60Z")", R"("08:30:00.123+05:30")", R"("00:00:00z")"},
        {R"("08:30:00")", R"("24:00:00Z")", R"("08:60:00Z")", R"("8:30:00Z")"});
  Check(fmt_schema("date-time"), {R"("2024-01-15T10:20:30Z")", R"("2024-01-15t10:20:30.5-08:00")"},
        {R"("2024-01-15 10:20:30Z")", R"("2024-01-15T10:20:30")", R"("2024-01-15")"});
  Check(fmt_schema("email"), {R"("a.b+c@example.com")", R"("x@localhost")"},
        {R"("a@@b")", R"("a.@b.com")", R"("@b.com")", R"("a@-b.com")", R"("a b@c.d")"});
  Check(fmt_schema("uuid"), {R"("123e4567-e89b-12d3-a456-426614174000")"},
        {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
  Check(fmt_schema("ipv4"), {R"("192.168.0.1")", R"("0.0.0.0")", R"("255.255.255.255")"},
        {R"("256.1.1.1")", R"("01.1.1.1")", R"("1.1.1")", R"("1.1.1.1.")"});
  Check(fmt_schema("ipv6"),
        {R"("::")", R"("::1")", R"("fe80::1")", R"("2001:db8:0:0:0:0:2:1")",
         R"("::ffff:192.168.0.1")", R"("1:2:3:4:5:6:7::")"},
        {R"(":::")", R"("1:2:3:4:5:6:7:8:9")", R"("12345::")", R"("1::2::3")", R"("g::")"});
  Check(fmt_schema("hostname"), {R"("example.com")", R"("a-b.c")", R"("localhost")"},
        {R"("-a.com")", R"("a-.com")", R"("a..b")", R"("")", R"("a_b.com")"});
  Check(fmt_schema("uri"),
        {R"("https://example.com/a/b?q=1#frag")", R"("mailto:a@b.c")", R"("urn:isbn:0451450523")",
         R"("http://user:pw@host:8080/p%20q")", R"("file:///etc/hosts")"},
        {R"("example.com")", R"("http://host:80x/")", R"("http://a b")", R"("1http://x")",
         R"("http://x/%zz")", R"("http://x#a#b")"});
  Check(fmt_schema("uri-reference"),
        {R"("../a/b?x#y")", R"("//host/p")", R"("")", R"("a:b")", R"("#top")", R"("p@q/r:s")"},
        {R"("a b")", R"("%zz")", R"("#a#b")", R"("a/b:c d")", R"("1a:b/c#d#e")"});
  // 253 characters at most for a hostname.
  const std::string label(63, 'a');
  const std::string host = label + "." + label + "." + label + "." + std::string(61, 'b');
  ASSERT_EQ(host.size(), 253u);
  Check(fmt_schema("hostname"), {"\"" + host + "\""}, {"\"" + host + "b\""});
  // A format next to a pattern: both hold.
  Check(R"({"type":"string","format":"date","pattern":"^2024-"})", {R"("2024-05-01")"},
        {R"("2023-05-01")", R"("2024-05-32")"});
}

TEST(SchemaPatternTest, Reports) {
  // Enforced: nothing reported.
  EXPECT_TRUE(Unenforced(PatternSchema("^a+$")).empty());
  EXPECT_TRUE(Unenforced(R"({"type":"string","format":"email"})").empty());
  // What the parser cannot read: the keyword and its pointer.
  EXPECT_EQ(Unenforced(R"j({"properties":{"x":{"type":"string","pattern":"^(?=a)"}}})j"),
            std::vector<std::string>{"pattern@/properties/x"});
  EXPECT_EQ(Unenforced(PatternSchema(R"(\bword\b)")), std::vector<std::string>{"pattern@"});
  EXPECT_EQ(Unenforced(PatternSchema(R"((a)\1)")), std::vector<std::string>{"pattern@"});
  EXPECT_EQ(Unenforced(PatternSchema(R"(\p{L})")), std::vector<std::string>{"pattern@"});
  // A string schema compiled once is reported at every place it occurs.
  EXPECT_EQ(Unenforced(R"j({"properties":{"a":{"type":"string","pattern":"(?=x)"},
                             "b":{"type":"string","pattern":"(?=x)"}}})j"),
            (std::vector<std::string>{"pattern@/properties/a", "pattern@/properties/b"}));
  // Unknown formats, on any type.
  EXPECT_EQ(Unenforced(R"({"type":"string","format":"iri-reference"})"),
            std::vector<std::string>{"format@"});
  EXPECT_EQ(Unenforced(R"({"type":"integer","format":"int16"})"),
            std::vector<std::string>{"format@"});
  EXPECT_TRUE(Unenforced(R"({"type":"integer","format":"int32"})").empty());
  // A pattern that is not a string is not a schema.
  EXPECT_FALSE(CompileJsonSchemaText(R"({"type":"string","pattern":5})").ok());
  // An unenforced pattern leaves the string otherwise constrained.
  const CompiledSchema c = MustCompile(PatternSchema("(?=x)", R"("maxLength":2)"));
  EXPECT_TRUE(Accepts(c, R"("ab")"));
  EXPECT_FALSE(Accepts(c, R"("abc")"));
}

TEST(SchemaPatternTest, NumericFormats) {
  // Numbers: the machine type's range, merged with minimum / maximum.
  // Instances are whole JSON texts here.
  const auto check = [](const std::string& schema, const std::vector<std::string>& valid,
                        const std::vector<std::string>& invalid) {
    const CompiledSchema c = MustCompile(schema);
    EXPECT_TRUE(c.unenforced.empty()) << schema;
    for (const auto& v : valid) EXPECT_TRUE(Accepts(c, v)) << schema << " should accept " << v;
    for (const auto& v : invalid) EXPECT_FALSE(Accepts(c, v)) << schema << " should reject " << v;
  };
  check(R"({"type":["integer","null"],"format":"int32"})",
        {"0", "2147483647", "-2147483648", "null"}, {"2147483648", "-2147483649", "1e10"});
  check(R"({"type":"integer","format":"int32","minimum":-5})", {"-5", "2147483647"},
        {"-6", "2147483648"});
  // int64: a bounded number keeps at most 16 integer digits.
  check(R"({"type":"integer","format":"int64"})", {"1733140800000", "-999999999999999", "42"},
        {"9223372036854775808", "-9223372036854775809", "1e19"});
  EXPECT_EQ(Unenforced(R"({"type":"number","format":"double"})"),
            std::vector<std::string>{"format@"});
  check(R"({"type":"number","format":"utc-millisec"})", {"1733140800000", "-1.5"}, {"\"x\""});
  // A numeric format does not constrain strings (nor a string format numbers).
  check(R"({"type":["string","integer"],"format":"int32"})", {R"("99999999999")", "7"},
        {"99999999999"});
  check(R"({"type":["string","integer"],"format":"date"})", {R"("2024-02-29")", "99999999999"},
        {R"("2023-02-29")"});
}

TEST(SchemaPatternTest, PatternProperties) {
  // Whole JSON texts here.
  const auto check = [](const std::string& schema, const std::vector<std::string>& valid,
                        const std::vector<std::string>& invalid, bool lenient = false) {
    CompileOptions o;
    o.strict_defaults = !lenient;
    auto c = CompileJsonSchemaText(schema, o);
    ASSERT_TRUE(c.ok()) << schema;
    EXPECT_TRUE(c->unenforced.empty()) << schema << ": " << c->unenforced[0].ToString();
    for (const auto& v : valid) EXPECT_TRUE(Accepts(*c, v)) << schema << " should accept " << v;
    for (const auto& v : invalid) EXPECT_FALSE(Accepts(*c, v)) << schema << " should reject " << v;
  };
  // Keys must match the pattern; values follow its schema.
  check(R"({"type":"object","patternProperties":{"^x-[a-z]+$":{"type":"integer"}},
            "additionalProperties":false})",
        {"{}", R"({"x-a":1})", R"({"x-ab":1,"x-c":-2})"},
        {R"({"y":1})", R"({"x-a":"s"})", R"({"x-":1})", R"({"x-A":1})", R"({"x-a":1,"z":2})"});
  // Strict defaults: no other extra keys. Listed keys first, in order.
  check(R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"],
            "patternProperties":{"^[0-9]+$":{"type":"boolean"}}})",
        {R"({"name":"a"})", R"({"name":"a","12":true,"3":false})"},
        {R"({"12":true})", R"({"name":"a","1x":true})", R"({"name":"a","1":1})"});
  // Other extra keys follow additionalProperties.
  check(R"({"type":"object","patternProperties":{"^n_":{"type":"integer"}},
            "additionalProperties":{"type":"string"}})",
        {R"({"n_a":1,"b":"s"})", R"({"b":"s","n_x":2})", R"({"n":"s"})"},
        {R"({"n_a":"s"})", R"({"b":1})"});
  // Lenient: other extra keys take any value.
  check(R"({"type":"object","patternProperties":{"^n_":{"type":"integer"}}})",
        {R"({"n_a":1,"b":[true]})"}, {R"({"n_a":"s"})"}, /*lenient=*/true);
  // Escaped characters in keys: the pattern reads the key's text.
  check(R"({"patternProperties":{"^a\"b$":{"const":1}},"additionalProperties":false})",
        {R"({"a\"b":1})"}, {R"({"ab":1})", R"({"a\"b":2})"});
  // A listed key the pattern also matches is fine when the pattern allows any value.
  check(R"({"properties":{"x-id":{"type":"string"}},"patternProperties":{"^x-":{}},
            "additionalProperties":false})",
        {R"({"x-id":"a","x-b":[1]})"}, {R"({"y":1})"});
  // Reported: several patterns, a listed key both constrain, a pattern the
  // parser cannot read.
  EXPECT_EQ(Unenforced(R"({"patternProperties":{"^a":{"type":"integer"},"^b":{}}})"),
            std::vector<std::string>{"patternProperties@"});
  EXPECT_EQ(Unenforced(R"({"properties":{"x-id":{"type":"string"}},
                           "patternProperties":{"^x-":{"type":"string","maxLength":3}}})"),
            std::vector<std::string>{"patternProperties@"});
  EXPECT_EQ(Unenforced(R"j({"properties":{"o":{"patternProperties":{"(?=a)":{}}}}})j"),
            std::vector<std::string>{"patternProperties@/properties/o"});
  EXPECT_FALSE(CompileJsonSchemaText(R"({"patternProperties":[1]})").ok());
}

// The DFA against std::regex (ECMAScript, regex_search) on random ASCII
// strings, characters JSON escapes included.
TEST(SchemaPatternTest, MatchesStdRegexSearch) {
  const std::vector<std::string> patterns = {
      "ab", "^ab", "ab$", "^a|b$", "a.c", "^[^a-c]*$", "(ab|c)+d", "^x{2,4}$", "\\d\\s\\w",
      "[\"\\\\]", "^.*\\n", "a?b*c+$", "^(a|ab)c$", "[\\x01-\\x08]", "^\\S+$", "(?:xy){0,2}z",
      "^[a\\-c]+$", "\\.$",
      // Anchors inside a group that is a whole branch.
      "(^ab$)", "^$|(^a+$)", "(^a)|(b$)", "^(a|b$)", "(?:^x|(y$))|z"};
  const std::string alphabet = "abcdxyz0 .-\"\\\n\r\t\x01\x08";
  std::mt19937 rng(7);
  for (const auto& p : patterns) {
    auto dfa = CompilePatternDfa(p);
    ASSERT_TRUE(dfa.ok()) << p << ": " << dfa.status().message();
    const std::regex re(p, std::regex::ECMAScript);
    for (int i = 0; i < 400; ++i) {
      std::string s;
      const int len = static_cast<int>(rng() % 7);
      for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
      const bool want = std::regex_search(s, re);
      EXPECT_EQ(dfa->Accepts(CanonicalJsonStringContents(s)), want)
          << "pattern " << p << " on " << nlohmann::json(s).dump();
    }
  }
}

// Random walks through the matcher: every prefix it allows can be finished,
// and what it finishes matches.
TEST(SchemaPatternTest, RandomWalksNeverDeadEnd) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(^[a-c]{2,5}"?$)", ""},
      {"x.y", R"("maxLength":6)"},
      {R"(^\d+(\.\d{1,2})?$)", R"("minLength":3,"maxLength":5)"},
      {"^(é|\\n|\\\\)*$", R"("minLength":1,"maxLength":8)"},
      {"^(aa)*(b|\\t)?$", R"("minLength":3,"maxLength":7)"}};
  std::mt19937 rng(11);
  for (const auto& [pattern, extra] : cases) {
    const CompiledSchema c = MustCompile(PatternSchema(pattern, extra));
    ASSERT_TRUE(c.unenforced.empty()) << pattern;
    const std::wregex re(Wide(pattern), std::regex::ECMAScript);
    for (int walk = 0; walk < 100; ++walk) {
      GrammarMatcher m(&c.grammar);
      std::string text;
      while (!m.Finished()) {
        std::vector<uint8_t> ok;
        for (int b = 0; b < 256; ++b) {
          GrammarMatcher copy;
          copy.CopyFrom(m);
          if (copy.Advance(static_cast<uint8_t>(b))) ok.push_back(static_cast<uint8_t>(b));
        }
        ASSERT_FALSE(ok.empty()) << pattern << ": dead end after " << text;
        const uint8_t b = ok[rng() % ok.size()];
        ASSERT_TRUE(m.Advance(b));
        text += static_cast<char>(b);
        ASSERT_LT(text.size(), 200u);
      }
      const auto value = nlohmann::json::parse(text, nullptr, false);
      ASSERT_TRUE(value.is_string()) << text;
      const std::string s = value.get<std::string>();
      EXPECT_TRUE(std::regex_search(Wide(s), re)) << pattern << " produced " << text;
      EXPECT_EQ(value.dump(), text) << "not the canonical form";
    }
  }
}

}  // namespace
}  // namespace brisk
