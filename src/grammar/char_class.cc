#include "grammar/char_class.h"

namespace brisk {

bool ParseCharClass(std::string_view s, size_t* i, const CharClassDialect& dialect,
                    CharClass* out) {
  size_t& at = *i;
  ++at;  // '['
  out->ranges.clear();
  out->negate = at < s.size() && s[at] == '^';
  if (out->negate) ++at;
  for (bool first = true;; first = false) {
    if (at >= s.size()) {
      dialect.fail("unterminated character class");
      return false;
    }
    if (s[at] == ']' && !(first && dialect.leading_bracket_is_member)) {
      ++at;
      return true;
    }
    uint32_t lo = 0;
    CodePointRanges set;
    if (!dialect.read_member(&lo, &set)) return false;
    if (!set.empty()) {
      out->ranges.insert(out->ranges.end(), set.begin(), set.end());
      continue;
    }
    uint32_t hi = lo;
    if (at + 1 < s.size() && s[at] == '-' && s[at + 1] != ']') {
      ++at;
      if (!dialect.read_member(&hi, &set)) return false;
      if (!set.empty()) {
        dialect.fail("a class shorthand cannot end a range");
        return false;
      }
      if (hi < lo) {
        dialect.fail("character range out of order");
        return false;
      }
    }
    out->ranges.emplace_back(lo, hi);
  }
}

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace brisk
