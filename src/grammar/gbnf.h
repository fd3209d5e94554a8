// GBNF, the grammar format of llama.cpp, compiled to a CfgGrammar (cfg.h).
//
//   root  ::= "(" expr ")" | num     # comments run to the end of the line
//   num   ::= [0-9]+ ("." [0-9]{1,3})?
//
// Rules are `name ::= alternatives`; names are [A-Za-z0-9_-]+; a rule may
// span lines (it ends where the next `name ::=` starts). Items: string
// literals "..." with escapes \n \t \r \\ \" \[ \] \- \^ \/ \' \xHH \uHHHH
// \UHHHHHHHH (code points, encoded as UTF-8); character classes [a-z0-9_]
// and negated [^...] over code points (char_class.h); `.` (any UTF-8 character); rule
// references; groups ( ); `|`; postfix * + ? {m} {m,} {m,n}. The start
// symbol is `root`.
//
// Errors (InvalidArgument, with line:column): syntax errors, an undefined
// rule, a rule defined twice, no root, a root that matches no text, groups
// nested deeper than kMaxCfgNesting, a grammar past cfg.h's size limits.
// Never throws, and takes time linear in the text (plus what repetition
// counts expand to, bounded by kMaxCfgSymbols).
#pragma once

#include <memory>
#include <string_view>

#include "grammar/cfg.h"
#include "util/status.h"

namespace brisk {

Expected<std::shared_ptr<const CfgGrammar>> CompileGbnf(std::string_view text);

}  // namespace brisk
