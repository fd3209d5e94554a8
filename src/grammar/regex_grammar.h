// Regular expressions (the subset people send as vLLM's `regex`) compiled
// to a CfgGrammar (cfg.h). The whole output must match (a full match).
//
// Supported: literals (UTF-8), `.` (any character but \n, as in Python),
// escapes \n \t \r \f \v \a \0 \xHH \x{H...} \uHHHH \UHHHHHHHH and an
// escaped punctuation character; classes [...] / [^...] with ranges and
// \d \w \s \D \W \S (ASCII meanings: [0-9], [A-Za-z0-9_], [ \t\n\r\f\v]);
// groups ( ), (?: ), (?P<name> ), (?<name> ); `|`; quantifiers * + ?
// {m} {m,} {m,n} {,n}, each optionally lazy (`?` suffix: for a recognizer
// the same language); `^` only at the start and `$` only at the end.
//
// Anything else is an InvalidArgument naming the feature: backreferences,
// lookahead / lookbehind, inline flags, anchors elsewhere, \b \B \A \Z,
// Unicode property classes, possessive quantifiers. Never throws; nesting
// is bounded by kMaxCfgNesting.
#pragma once

#include <memory>
#include <string_view>

#include "grammar/cfg.h"
#include "util/status.h"

namespace brisk {

Expected<std::shared_ptr<const CfgGrammar>> CompileRegex(std::string_view pattern);

}  // namespace brisk
