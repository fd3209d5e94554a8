// Jinja lexer: template source -> flat token stream. Text between tags comes
// out already whitespace-controlled the way jinja2 does it with HF
// transformers' settings (trim_blocks=True, lstrip_blocks=True): `{%-`/`-%}`
// strip all adjacent whitespace, `{%+`/`+%}` opt out, a newline right after a
// block or comment tag is dropped, and indentation before a block or comment
// tag alone on its line is dropped. Comments vanish; {% raw %} bodies come
// out as text. Newlines are normalized to "\n" and one trailing newline of
// the template is dropped (keep_trailing_newline=False).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace brisk::jinja {

struct SourcePos {
  int line = 1;
  int col = 1;
};

enum class TokenKind : uint8_t {
  kText,        // literal template text (text)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier (text)
  kString,      // string literal, escapes decoded (text)
  kInt,         // integer literal (int_value)
  kFloat,       // float literal (float_value)
  kOperator,    // + - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { } (text)
  kEof,
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  SourcePos pos;
};

// Errors: InvalidArgument "line:col: message" for unterminated tags,
// comments or strings, unbalanced brackets and unknown characters.
Expected<std::vector<Token>> Tokenize(std::string_view source);

}  // namespace brisk::jinja
