// GBNF, regex and choice compiled to CfgGrammar, recognized by CfgMatcher:
// accept / reject, prefix viability, rollback, error messages.
#include "grammar/cfg.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/cfg_matcher.h"
#include "grammar/gbnf.h"
#include "grammar/regex_grammar.h"

namespace brisk {
namespace {

using GrammarPtr = std::shared_ptr<const CfgGrammar>;

bool Accepts(const GrammarPtr& g, std::string_view text) {
  CfgMatcher m(g);
  return m.AdvanceBytes(text) && m.CanEnd();
}
// A prefix of some accepted text.
bool Viable(const GrammarPtr& g, std::string_view text) {
  CfgMatcher m(g);
  return m.AdvanceBytes(text);
}

GrammarPtr Gbnf(std::string_view text) {
  auto g = CompileGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}
GrammarPtr Regex(std::string_view text) {
  auto g = CompileRegex(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

constexpr const char* kArith = R"G(# arithmetic
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")"
number ::= [0-9]+
)G";

TEST(GbnfTest, Arithmetic) {
  auto g = Gbnf(kArith);
  ASSERT_TRUE(g);
  for (const char* ok : {"1", "12+3", "(1+2)*3", "((4))", "1*2*3-4/5"})
    EXPECT_TRUE(Accepts(g, ok)) << ok;
  for (const char* bad : {"", "+", "1+", "(1", "1)", "a", "1 + 2"})
    EXPECT_FALSE(Accepts(g, bad)) << bad;
  EXPECT_TRUE(Viable(g, "(1+"));
  EXPECT_FALSE(Viable(g, "(1+)"));
}

TEST(GbnfTest, LiteralsEscapesClassesAndRepetition) {
  auto g = Gbnf(
      "root ::= \"a\\n\\t\\\"\\x41\\u00e9\\U0001F600\" [^a-c] [\\]x-z]? .{2} \"q\"{1,3} "
      "\"r\"{2,} \"s\"{2}\n");
  ASSERT_TRUE(g);
  const std::string head = "a\n\t\"A\xc3\xa9\xf0\x9f\x98\x80";
  EXPECT_TRUE(Accepts(g, head + "d]" +
                             "\xe2\x82\xac"
                             "1"
                             "q"
                             "rr"
                             "ss"));
  EXPECT_TRUE(Accepts(g, head + "\xc3\xa9"
                                "ab"
                                "qqq"
                                "rrrr"
                                "ss"));
  EXPECT_FALSE(Accepts(g, head + "a"
                                 "ab"
                                 "q"
                                 "rr"
                                 "ss"));  // [^a-c]
  EXPECT_FALSE(Accepts(g, head + "d"
                                 "ab"
                                 "qqqq"
                                 "rr"
                                 "ss"));  // q{1,3}
  EXPECT_FALSE(Accepts(g, head + "d"
                                 "ab"
                                 "q"
                                 "r"
                                 "ss"));  // r{2,}
  EXPECT_FALSE(Accepts(g, head + "d"
                                 "ab"
                                 "q"
                                 "rr"
                                 "sss"));  // s{2}
  // A negated class matches whole UTF-8 characters only.
  EXPECT_FALSE(Viable(g, head + "\x80"));
  EXPECT_TRUE(Viable(g, head + "\xe2\x82"));
}

TEST(GbnfTest, MultiLineRulesAndRecursion) {
  auto g = Gbnf(R"G(
root ::= "[" (
    item
    ("," item)*
  )? "]"
item ::= root
       | "x"   # a leaf
)G");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Accepts(g, "[]"));
  EXPECT_TRUE(Accepts(g, "[x,[x,[]],x]"));
  EXPECT_FALSE(Accepts(g, "[x,]"));
}

TEST(GbnfTest, Errors) {
  auto undefined = CompileGbnf("root ::= a b\na ::= \"x\"\n");
  ASSERT_FALSE(undefined.ok());
  EXPECT_NE(undefined.status().message().find("undefined rule 'b'"), std::string::npos);
  EXPECT_NE(undefined.status().message().find("1:12"), std::string::npos);
  auto noroot = CompileGbnf("a ::= \"x\"");
  ASSERT_FALSE(noroot.ok());
  EXPECT_NE(noroot.status().message().find("root"), std::string::npos);
  auto syntax = CompileGbnf("root ::= \"x\"\n  | ( \"y\" \n");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("expected ')'"), std::string::npos);
  auto unproductive = CompileGbnf("root ::= a\na ::= \"x\" a\n");
  ASSERT_FALSE(unproductive.ok());
  EXPECT_NE(unproductive.status().message().find("matches no text"), std::string::npos);
  for (const char* bad : {"root ::= \"abc", "root ::= [a-", "root ::= \"\\q\"", "root = \"x\"",
                          "root ::= x{3,1}", "root ::= \"a\"{100001}", "root ::= )",
                          "root ::= \"\\uD800\"", "root ::= \"a\"\nroot ::= \"b\""}) {
    auto r = CompileGbnf(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    }
  }
  std::string deep(300, '(');
  EXPECT_FALSE(CompileGbnf("root ::= " + deep + "\"a\"" + std::string(300, ')')).ok());
}

TEST(GbnfTest, UnproductiveAlternativesAreDropped) {
  // `loop` derives nothing; the alternative that uses it goes, the rest stays.
  auto g = Gbnf("root ::= loop | \"ok\"\nloop ::= \"l\" loop\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Accepts(g, "ok"));
  EXPECT_FALSE(Viable(g, "l"));  // no accepted text starts with 'l'
}

TEST(RegexTest, DatesPhonesAndClasses) {
  auto date = Regex(R"(^\d{4}-(0[1-9]|1[0-2])-\d{2}$)");
  ASSERT_TRUE(date);
  EXPECT_TRUE(Accepts(date, "2024-12-31"));
  EXPECT_FALSE(Accepts(date, "2024-13-01"));
  EXPECT_FALSE(Accepts(date, "2024-12-31 "));
  EXPECT_FALSE(Viable(date, "20x"));
  auto phone = Regex(R"(\(\d{3}\) \d{3}-\d{4})");
  ASSERT_TRUE(phone);
  EXPECT_TRUE(Accepts(phone, "(555) 123-4567"));
  EXPECT_FALSE(Accepts(phone, "555-123-4567"));
  auto words = Regex(R"([A-Z][a-z]+(?: [A-Z][a-z]+)*?\.?)");
  ASSERT_TRUE(words);
  EXPECT_TRUE(Accepts(words, "Hello World."));
  EXPECT_FALSE(Accepts(words, "hello"));
  auto cls = Regex(R"([^\s,]+(,\s*\w+)*|[\d\-x]{2,}|a.c|\x41\u00e9{,2}|[]a]|\.\*)");
  ASSERT_TRUE(cls);
  for (const char* ok : {"ab,  cd,e", "1-x", "abc",
                         "a\xc3\xa9"
                         "c",
                         "A", "A\xc3\xa9\xc3\xa9", "]", "a", ".*"})
    EXPECT_TRUE(Accepts(cls, ok)) << ok;
  for (const char* bad : {"a\nc", "b,", "", " ", "ab,"}) EXPECT_FALSE(Accepts(cls, bad)) << bad;
  auto empty_alt = Regex("(a|)b");
  ASSERT_TRUE(empty_alt);
  EXPECT_TRUE(Accepts(empty_alt, "b"));
  EXPECT_TRUE(Accepts(empty_alt, "ab"));
  auto brace = Regex("a{x}");  // not a quantifier: literal
  ASSERT_TRUE(brace);
  EXPECT_TRUE(Accepts(brace, "a{x}"));
}

TEST(RegexTest, BoundedRepeats) {
  auto g = Regex("(ab){2,4}c{0,2}");
  ASSERT_TRUE(g);
  for (const char* ok : {"abab", "ababab", "abababab", "ababcc", "abababc"})
    EXPECT_TRUE(Accepts(g, ok)) << ok;
  for (const char* bad : {"ab", "ababababab", "ababccc", "ababa"})
    EXPECT_FALSE(Accepts(g, bad)) << bad;
  auto wide = Regex("[a-z]{0,1000}");
  ASSERT_TRUE(wide);
  CfgMatcher m(wide);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(m.Advance('q')) << i;
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.Advance('q'));
  EXPECT_FALSE(CompileRegex("a{0,1001}").ok());
}

TEST(RegexTest, UnsupportedFeaturesAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {R"((a)\1)", "backreference"},
      {"(?=a)a", "lookahead"},
      {"(?<!a)b", "lookbehind"},
      {"(?i)a", "inline flag"},
      {"a^b", "'^'"},
      {"a$b", "'$'"},
      {R"(\bword)", "anchor"},
      {"a*+", "possessive"},
      {R"(\p{L})", "property"},
      {"(a", "missing ')'"},
      {"a)", "unbalanced"},
      {"*a", "nothing to repeat"},
      {"[a-", "unterminated"},
      {"[z-a]", "out of order"},
      {"a**", "multiple repeat"},
      {R"(\q)", "unknown escape"},
  };
  for (const auto& [pattern, word] : cases) {
    auto r = CompileRegex(pattern);
    ASSERT_FALSE(r.ok()) << pattern;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(word), std::string::npos)
        << pattern << ": " << r.status().message();
  }
  EXPECT_FALSE(CompileRegex("[^\\x00-\\x{10FFFF}]").ok());  // matches nothing
  EXPECT_FALSE(CompileRegex("a{100001}").ok());             // past the repeat limit
  EXPECT_FALSE(CompileRegex(std::string(300, '(') + std::string(300, ')')).ok());
}

TEST(ChoiceTest, ExactlyOneOfTheStrings) {
  auto g = CompileChoice({"yes", "no", "yes please", "\xc3\xa9t\xc3\xa9"});
  ASSERT_TRUE(g.ok());
  for (const char* ok : {"yes", "no", "yes please", "\xc3\xa9t\xc3\xa9"})
    EXPECT_TRUE(Accepts(*g, ok)) << ok;
  for (const char* bad : {"", "ye", "yes ", "nope", "yes pleasee"})
    EXPECT_FALSE(Accepts(*g, bad)) << bad;
  CfgMatcher m(*g);
  ASSERT_TRUE(m.AdvanceBytes("yes"));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.Finished());  // " please" may follow
  ASSERT_TRUE(m.AdvanceBytes(" please"));
  EXPECT_TRUE(m.Finished());
  EXPECT_FALSE(CompileChoice({}).ok());
}

TEST(CfgMatcherTest, RejectedBytesAndRollbackLeaveTheState) {
  auto g = Gbnf(kArith);
  ASSERT_TRUE(g);
  CfgMatcher m(g);
  ASSERT_TRUE(m.AdvanceBytes("(1+"));
  const size_t sets = m.num_sets(), items = m.num_items();
  EXPECT_FALSE(m.Advance(')'));
  EXPECT_FALSE(m.AdvanceBytes("2)x"));  // all or nothing
  EXPECT_EQ(m.num_sets(), sets);
  EXPECT_EQ(m.num_items(), items);
  ASSERT_TRUE(m.AdvanceBytes("23*4"));
  m.Rollback(sets);
  EXPECT_EQ(m.num_items(), items);
  ASSERT_TRUE(m.AdvanceBytes("5)"));
  EXPECT_TRUE(m.CanEnd());
  CfgMatcher copy;
  copy.CopyFrom(m);
  ASSERT_TRUE(copy.AdvanceBytes("*2"));
  EXPECT_TRUE(copy.CanEnd());
  EXPECT_TRUE(m.CanEnd());
  EXPECT_EQ(m.num_sets(), sets + 2);
}

TEST(CfgMatcherTest, LongTextsStayCheap) {
  // Left-recursive repetition keeps each Earley set small.
  auto g = Regex("[a-z ]*");
  ASSERT_TRUE(g);
  CfgMatcher m(g);
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(m.Advance(i % 7 ? 'a' : ' '));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_LT(m.num_items(), size_t{20001} * 8);
}

TEST(CfgMatcherTest, ChartLimitRejectsInsteadOfGrowing) {
  // Highly ambiguous: (a|aa|aaa)* over a long run of 'a' keeps many items.
  auto g = Gbnf("root ::= x*\nx ::= \"a\" | \"a\" \"a\" | root root\n");
  ASSERT_TRUE(g);
  CfgMatcher m(g);
  int accepted = 0;
  for (int i = 0; i < 5000 && m.Advance('a'); ++i) ++accepted;
  EXPECT_GT(accepted, 0);
  EXPECT_LE(m.num_items(), CfgMatcher::kMaxChartItems);
}

TEST(Utf8RangesTest, SplitsAtLengthsAndSurrogates) {
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
  Utf8RangeSequences(0x7F, 0x10000, &seqs);
  // Every code point in range is covered exactly once, none outside.
  auto covered = [&](uint32_t cp) {
    std::string u;
    AppendUtf8(cp, &u);
    int n = 0;
    for (const auto& s : seqs) {
      if (s.size() != u.size()) continue;
      bool all = true;
      for (size_t i = 0; i < s.size(); ++i)
        all = all && static_cast<uint8_t>(u[i]) >= s[i].first &&
              static_cast<uint8_t>(u[i]) <= s[i].second;
      n += all;
    }
    return n;
  };
  for (uint32_t cp : {0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFFu, 0x10000u, 0x1234u})
    EXPECT_EQ(covered(cp), 1) << std::hex << cp;
  EXPECT_EQ(covered(0x7E), 0);
  EXPECT_EQ(covered(0x10001), 0);
}

}  // namespace
}  // namespace brisk
