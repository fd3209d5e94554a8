// JSON Schema `pattern` and `format` on strings, compiled to a ByteDfa
// (byte_dfa.h) over the JSON text of the string's contents (between the
// quotes), which GrammarMatcher follows byte by byte.
//
// pattern: the syntax regex_parser.h reads, in its ECMA-262 dialect, with
// JSON Schema's search semantics: a pattern is not anchored, so "p" means
// "any text, p, any text" (any character, line breaks included). A branch
// of the top-level alternation that starts with '^' is anchored at the
// start of the string, one that ends in an unescaped '$' at its end
// (ECMA-262 without the m flag: the very end). A pattern the parser cannot
// read (lookaround, backreferences, \b, \p{...}, '^'/'$' inside a group,
// ...) is an InvalidArgument naming the feature: the schema compiler then
// reports the keyword as not enforced.
//
// Encoding: the DFA accepts the canonical JSON text of the matching
// strings only, the form nlohmann::json's dump() and
// CanonicalJsonStringContents() write: characters raw as UTF-8, except
// '"' as \", '\' as \\, control characters as \b \f \n \r \t or \u00xx
// (lowercase hex). So a character the pattern allows that JSON must escape
// is produced escaped; the same text written with another escape (\/,
// \u0041) is not accepted.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/byte_dfa.h"
#include "util/status.h"

namespace brisk {

// The contents of the strings `pattern` matches (search semantics above).
// InvalidArgument for a pattern the parser cannot read, ResourceExhausted
// past the automaton size limits.
Expected<ByteDfa> CompilePatternDfa(std::string_view pattern);

// The anchored pattern (for CompilePatternDfa) that enforces the JSON
// Schema `format`, or "" for a format this module does not enforce.
// Enforced: date-time, date, time (RFC 3339 full-date / full-time, days per
// month and leap years checked; time needs an offset), email, hostname,
// uri, uri-reference, uuid, ipv4, ipv6. email, hostname and uri(-reference)
// are practical subsets, every string they accept valid (see the .cc).
std::string FormatPattern(std::string_view format);

// The numeric formats (OpenAPI's int32 and int64; draft 3's utc-millisec,
// which is any number): the range of numbers they allow (infinite ends
// where none), or nullopt for a format that is not numeric. A numeric
// format constrains numbers only, a string format strings only. The int64
// ends are the doubles nearest inside +-2^63 (the number matcher compares
// in double); a bounded number has at most 16 integer digits and no
// exponent (matcher_values.cc), so int64 values of 10^16 and more are
// refused. float and double are not here: their ranges need exponents.
std::optional<std::pair<double, double>> NumericFormatRange(std::string_view format);

// A limit on the character count that the format implies (hostname: 253),
// or 0xFFFFFFFF.
uint32_t FormatMaxChars(std::string_view format);

// A string schema's contents as one DFA: `pattern` and `format` (either may
// be null; both: their product) with [min_chars, max_chars] folded in
// (LimitJsonChars). `dfa` is nullopt when there is no pattern and no known
// format, or none of them compiled (the caller then enforces the lengths
// itself); an empty DFA means no string fits. `unenforced` names what was
// left out: "pattern" / "format" (not readable, or too large), "minLength"
// (its counter too large).
struct StringContents {
  std::optional<ByteDfa> dfa;
  std::vector<std::string> unenforced;
};
StringContents CompileStringContents(const std::string* pattern, const std::string* format,
                                     uint32_t min_chars, uint32_t max_chars);

}  // namespace brisk
