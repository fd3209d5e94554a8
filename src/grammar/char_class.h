// Bracket expressions, the character-class syntax GBNF (gbnf.h) and regular
// expressions (regex_parser.h) share:
//
//   '['  ['^']  member ['-' member] ...  ']'
//
// '^' right after '[' negates the class; "lo-hi" is a range of code points
// (in order: "z-a" is an error); a '-' right before the closing ']' is
// itself a member. What one member is (which escapes, whether a shorthand
// such as \d stands for a set) is the dialect's: the caller reads each one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace brisk {

// Inclusive code point ranges, in any order, possibly overlapping.
using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;

struct CharClass {
  CodePointRanges ranges;
  bool negate = false;  // every code point not in `ranges`
};

// How a dialect reads the members of a class. Both functions work on the
// cursor the caller passed to ParseCharClass (`*i`, its own position).
struct CharClassDialect {
  // Reads the member at the cursor and moves past it: one code point into
  // *cp, or a set (a shorthand such as \d) appended to *set. False on an
  // error, which it reports itself.
  std::function<bool(uint32_t* cp, CodePointRanges* set)> read_member;
  // Reports an error of the class itself, found at the cursor.
  std::function<void(std::string_view what)> fail;
  // A ']' right after '[' or "[^" is a member (regular expressions: "[]a]");
  // otherwise it closes the class (GBNF: "[]" matches nothing).
  bool leading_bracket_is_member = false;
};

// Parses the class at s[*i] == '[' and moves *i past its ']'. False on an
// error (reported through the dialect: "unterminated character class",
// "character range out of order", "a class shorthand cannot end a range",
// or the member reader's own), with *i where it was found.
bool ParseCharClass(std::string_view s, size_t* i, const CharClassDialect& dialect, CharClass* out);

// The value of a hexadecimal digit, -1 for any other character (the \x, \u
// and \U escapes of both dialects).
int HexDigitValue(char c);

}  // namespace brisk
