// Jinja parser: tokens (lexer.h) -> syntax tree (ast.h), with jinja2's
// grammar and operator precedence. Nesting is capped so that neither the
// parser nor the interpreter can exhaust the stack on hostile input.
#pragma once

#include <memory>
#include <string_view>

#include "jinja/ast.h"
#include "util/status.h"

namespace brisk::jinja {

// Deepest nesting of statements, brackets and unary operators accepted.
inline constexpr int kMaxParseNesting = 100;
// Tallest expression tree accepted (long operator chains count too).
inline constexpr int kMaxExprHeight = 256;

// Errors: InvalidArgument "line:col: message" (syntax errors, unknown tags,
// unsupported constructs such as {% include %} or recursive loops).
Expected<std::unique_ptr<Template>> ParseTemplate(std::string_view source);

}  // namespace brisk::jinja
