// The Jinja lexer on its own: the token stream, whitespace control as HF
// transformers configures jinja2 (trim_blocks, lstrip_blocks), raw blocks,
// literals and escapes, and errors that name line:col.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "jinja/lexer.h"

namespace brisk::jinja {
namespace {

// One token as a short word: T"text" {{ }} {% %} N(name) S(string) I(1)
// F(1.5) O(op) EOF.
std::string Word(const Token& t) {
  switch (t.kind) {
    case TokenKind::kText: return "T\"" + t.text + "\"";
    case TokenKind::kVarBegin: return "{{";
    case TokenKind::kVarEnd: return "}}";
    case TokenKind::kBlockBegin: return "{%";
    case TokenKind::kBlockEnd: return "%}";
    case TokenKind::kName: return "N(" + t.text + ")";
    case TokenKind::kString: return "S(" + t.text + ")";
    case TokenKind::kInt: return "I(" + std::to_string(t.int_value) + ")";
    case TokenKind::kFloat: return "F(" + std::to_string(t.float_value) + ")";
    case TokenKind::kOperator: return "O(" + t.text + ")";
    case TokenKind::kEof: return "EOF";
  }
  return "?";
}

// The token stream as words separated by spaces, or "ERROR <status>".
std::string Lex(std::string_view source) {
  auto tokens = Tokenize(source);
  if (!tokens.ok()) return "ERROR " + tokens.status().ToString();
  std::string out;
  for (const Token& t : *tokens) {
    if (!out.empty()) out += ' ';
    out += Word(t);
  }
  return out;
}

// Only the text tokens, concatenated: what the template prints around its tags.
std::string Text(std::string_view source) {
  auto tokens = Tokenize(source);
  if (!tokens.ok()) return "ERROR " + tokens.status().ToString();
  std::string out;
  for (const Token& t : *tokens) {
    if (t.kind == TokenKind::kText) out += "[" + t.text + "]";
  }
  return out;
}

std::string Error(std::string_view source) {
  auto tokens = Tokenize(source);
  if (tokens.ok()) return "no error";
  EXPECT_EQ(tokens.status().code(), StatusCode::kInvalidArgument);
  return tokens.status().message();
}

// ------------------------------------------------------------------ tokens

TEST(JinjaLexerTest, TextAndTagsWithPositions) {
  auto tokens = Tokenize("Hi {{ name }}!\n{% if x %}y{% endif %}");
  ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
  std::vector<std::string> words;
  std::vector<std::pair<int, int>> pos;
  for (const Token& t : *tokens) {
    words.push_back(Word(t));
    pos.emplace_back(t.pos.line, t.pos.col);
  }
  EXPECT_EQ(words,
            (std::vector<std::string>{"T\"Hi \"", "{{", "N(name)", "}}", "T\"!\n\"", "{%", "N(if)",
                                      "N(x)", "%}", "T\"y\"", "{%", "N(endif)", "%}", "EOF"}));
  EXPECT_EQ(pos, (std::vector<std::pair<int, int>>{{1, 1},
                                                   {1, 4},
                                                   {1, 7},
                                                   {1, 12},
                                                   {1, 14},
                                                   {2, 1},
                                                   {2, 4},
                                                   {2, 7},
                                                   {2, 9},
                                                   {2, 11},
                                                   {2, 12},
                                                   {2, 15},
                                                   {2, 21},
                                                   {2, 23}}));
}

TEST(JinjaLexerTest, EmptySourceIsJustEof) {
  EXPECT_EQ(Lex(""), "EOF");
  EXPECT_EQ(Lex("plain text"), "T\"plain text\" EOF");
  // A lone brace is text; only {{ {% {# open tags.
  EXPECT_EQ(Lex("a { b } c"), "T\"a { b } c\" EOF");
}

TEST(JinjaLexerTest, Literals) {
  EXPECT_EQ(Lex("{{ 42 1_000 3.5 1e3 2.5E-1 }}"),
            "{{ I(42) I(1000) F(3.500000) F(1000.000000) F(0.250000) }} EOF");
  EXPECT_EQ(Lex("{{ 'single' \"double\" }}"), "{{ S(single) S(double) }} EOF");
  // `x.0.1` is two subscripts, not the float 0.1.
  EXPECT_EQ(Lex("{{ x.0.1 }}"), "{{ N(x) O(.) I(0) O(.) I(1) }} EOF");
  EXPECT_EQ(Lex("{{ _a1 b_ }}"), "{{ N(_a1) N(b_) }} EOF");
}

TEST(JinjaLexerTest, StringEscapesAreDecoded) {
  auto tokens = Tokenize(R"({{ 'a\tb\\c\'d\"e\x41\u00e9\U0001F600\101\q' }})");
  ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
  ASSERT_EQ((*tokens)[1].kind, TokenKind::kString);
  // Unknown escapes stay as written (\q), octal \101 is 'A'.
  EXPECT_EQ((*tokens)[1].text,
            "a\tb\\c'd\"eA\xC3\xA9\xF0\x9F\x98\x80"
            "A\\q");
}

TEST(JinjaLexerTest, OperatorsLongestFirst) {
  EXPECT_EQ(Lex("{{ a//b**c==d!=e>=f<=g }}"),
            "{{ N(a) O(//) N(b) O(**) N(c) O(==) N(d) O(!=) N(e) O(>=) N(f) O(<=) N(g) }} EOF");
  EXPECT_EQ(Lex("{{ f(x)[0]|t ~ {'k': 1} }}"),
            "{{ N(f) O(() N(x) O()) O([) I(0) O(]) O(|) N(t) O(~) O({) S(k) O(:) I(1) O(}) }} EOF");
  // A `}}` inside open brackets does not end the tag.
  EXPECT_EQ(Lex("{{ {'a': {'b': 1}} }}"), "{{ O({) S(a) O(:) O({) S(b) O(:) I(1) O(}) O(}) }} EOF");
}

// ------------------------------------------------------------------ whitespace

TEST(JinjaLexerTest, TrimBlocksDropsTheNewlineAfterABlockTag) {
  EXPECT_EQ(Text("{% if x %}\nA\n{% endif %}\nB"), "[A\n][B]");
  // Not after a print tag.
  EXPECT_EQ(Text("{{ x }}\nA"), "[\nA]");
  // Only one newline.
  EXPECT_EQ(Text("{% if x %}\n\nA{% endif %}"), "[\nA]");
}

TEST(JinjaLexerTest, LstripBlocksDropsIndentationBeforeABlockTag) {
  EXPECT_EQ(Text("  {% if x %}\n  y\n  {% endif %}\n"), "[  y\n]");
  // Print tags keep their indentation, and text before a tag on the same
  // line is not indentation.
  EXPECT_EQ(Text("  {{ x }}\n"), "[  ]");
  EXPECT_EQ(Text("t  {% if x %}y{% endif %}"), "[t  ][y]");
  // Comments are stripped like block tags.
  EXPECT_EQ(Text("a\n  {# note #}\nb"), "[a\n][b]");
}

TEST(JinjaLexerTest, MinusAndPlusModifiers) {
  EXPECT_EQ(Text("a   {%- if x -%}   b   {%- endif -%}   c"), "[a][b][c]");
  EXPECT_EQ(Text("a \n {{- 'b' -}} \n c"), "[a][c]");
  // `-` strips Unicode whitespace too (U+3000 IDEOGRAPHIC SPACE).
  EXPECT_EQ(Text("a\xE3\x80\x80{{- x -}}\xE3\x80\x80"
                 "b"),
            "[a][b]");
  // `+` turns lstrip_blocks / trim_blocks off for that side.
  EXPECT_EQ(Text("  {%+ if x %}y{% endif +%}\nz"), "[  ][y][\nz]");
  EXPECT_EQ(Text("a {#- c -#} b"), "[a][b]");
}

TEST(JinjaLexerTest, NewlinesAreNormalizedAndOneTrailingNewlineDropped) {
  EXPECT_EQ(Text("x\r\ny\rz\r\n"), "[x\ny\nz]");
  EXPECT_EQ(Text("x\n\n"), "[x\n]");
  EXPECT_EQ(Text("{% if x %}\r\nA\r\n{% endif %}\r\n"), "[A\n]");
}

TEST(JinjaLexerTest, CommentsVanish) {
  EXPECT_EQ(Lex("a{# {{ not a tag }} #}b"), "T\"a\" T\"b\" EOF");
}

// ------------------------------------------------------------------ raw

TEST(JinjaLexerTest, RawBlocksComeOutAsText) {
  EXPECT_EQ(Lex("{% raw %}{{ not parsed }}{% if %}{% endraw %}"),
            "T\"{{ not parsed }}{% if %}\" EOF");
  EXPECT_EQ(Lex("a{%raw%}{#x#}{%endraw%}b"), "T\"a\" T\"{#x#}\" T\"b\" EOF");
  // Whitespace control on both raw tags.
  EXPECT_EQ(Text("  {%- raw -%}  a  {%- endraw -%}  b"), "[a][b]");
  // No trim_blocks after {% raw %}, but after {% endraw %}.
  EXPECT_EQ(Text("{% raw %}\nx\n{% endraw %}\ny"), "[\nx\n][y]");
  // `{% rawx %}` is not a raw tag.
  EXPECT_EQ(Lex("{% rawx %}"), "{% N(rawx) %} EOF");
}

// ------------------------------------------------------------------ errors

TEST(JinjaLexerTest, ErrorsCarryLineAndColumn) {
  EXPECT_EQ(Error("{{ 'abc }}"), "1:4: unterminated string");
  EXPECT_EQ(Error("ok\n  {{ \"x }}"), "2:6: unterminated string");
  EXPECT_EQ(Error("a\n{# never closed"), "2:1: missing end of comment tag");
  EXPECT_EQ(Error("x\n\n{% raw %}abc"), "3:1: missing end of raw directive");
  EXPECT_EQ(Error("{{ x"), "1:1: unexpected end of template, expected '}}'");
  EXPECT_EQ(Error("\n {% if x"), "2:2: unexpected end of template, expected '%}'");
  EXPECT_EQ(Error("{{ (1] }}"), "1:6: unexpected ']', expected ')'");
  EXPECT_EQ(Error("{{ ) }}"), "1:4: unexpected ')'");
  EXPECT_EQ(Error("{{ a @ b }}"), "1:6: unexpected char '@'");
  EXPECT_EQ(Error("{{ 99999999999999999999 }}"), "1:4: integer literal too large");
  EXPECT_EQ(Error("{{ '\\x4' }}"), "1:5: truncated \\x escape");
  EXPECT_EQ(Error("{{ '\\U00110000' }}"), "1:5: escape out of Unicode range");
  // Inside open brackets `}}` is two closing braces.
  EXPECT_EQ(Error("{{ [1, 2 }}"), "1:10: unexpected '}', expected ']'");
}

TEST(JinjaLexerTest, DeepBracketsAreAnErrorNotACrash) {
  std::string deep = "{{ " + std::string(100000, '[') + " }}";
  EXPECT_EQ(Error(deep), "1:260: brackets nested too deeply");
}

}  // namespace
}  // namespace brisk::jinja
