// The regular-expression parser behind regex_grammar.h (the dialect and
// its limits are documented there), written against a builder so that the
// same syntax can build a CfgGrammar (CfgBuilder, cfg.h) or a regex tree
// for JSON Schema `pattern` (string_pattern.h).
//
// Builder: NewRule(name), AddAlt(rule, syms), CodePointClass(ranges,
// negate), AppendLiteral(utf8_of_one_code_point, &seq), Star, Plus,
// Optional, Repeat(x, min, max), Group(seq), Finish(root) returning an
// Expected<...>. Internal to src/grammar.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/cfg.h"
#include "grammar/char_class.h"
#include "util/status.h"
#include "util/utf8.h"

namespace brisk::regex_parser {

// Python's meanings (vLLM's `regex`) by default. ecma: ECMA-262's where
// they differ and the parser can express it: `.` excludes \r, U+2028 and
// U+2029 too, and \s (\S) takes in the Unicode spaces.
struct RegexDialect {
  bool ecma = false;
};

using Ranges = CodePointRanges;

inline bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

inline Ranges Complement(const Ranges& in) {
  Ranges sorted = in, out;
  std::sort(sorted.begin(), sorted.end());
  uint32_t next = 0;
  for (const auto& [lo, hi] : sorted) {
    if (lo > next) out.emplace_back(next, lo - 1);
    if (hi + 1 > next) next = hi + 1;
  }
  if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
  return out;
}

// \d \w \s and their negations; false for any other letter. ecma: \s is
// ECMA-262's WhiteSpace and LineTerminator (Unicode spaces included).
inline bool ShorthandClass(char c, Ranges* out, bool ecma) {
  Ranges r;
  switch (c | 0x20) {
    case 'd': r = {{'0', '9'}}; break;
    case 'w': r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; break;
    case 's':
      r = {{'\t', '\r'}, {' ', ' '}};
      if (ecma)
        r.insert(r.end(), {{0xA0, 0xA0},
                           {0x1680, 0x1680},
                           {0x2000, 0x200A},
                           {0x2028, 0x2029},
                           {0x202F, 0x202F},
                           {0x205F, 0x205F},
                           {0x3000, 0x3000},
                           {0xFEFF, 0xFEFF}});
      break;
    default: return false;
  }
  if (c >= 'A' && c <= 'Z') r = Complement(r);
  out->insert(out->end(), r.begin(), r.end());
  return true;
}

template <class Builder>
class RegexParser {
 public:
  RegexParser(std::string_view p, RegexDialect dialect) : s_(p), dialect_(dialect) {}

  // The builder's Finish(root), or the parse error.
  auto Run() -> decltype(std::declval<Builder&>().Finish(0)) {
    if (!s_.empty() && s_[0] == '^') ++i_;
    const uint32_t root = ParseAlternation(0);
    if (ok() && i_ < s_.size()) Fail(fmt::format("unbalanced ')' at offset {}", i_));
    if (!ok()) return error_;
    return b_.Finish(root);
  }

 private:
  bool ok() const { return error_.ok(); }
  void Fail(std::string what) {
    if (ok()) error_ = InvalidArgument("regex: {}", what);
  }
  void Unsupported(const std::string& what) {
    Fail(fmt::format("{} (at offset {}) is not supported", what, i_));
  }
  bool At(char c) const { return i_ < s_.size() && s_[i_] == c; }

  uint32_t ParseAlternation(int depth) {
    const uint32_t rule = b_.NewRule("alt");
    while (ok()) {
      b_.AddAlt(rule, ParseConcat(depth));
      if (!At('|')) break;
      ++i_;
    }
    return rule;
  }

  std::vector<uint32_t> ParseConcat(int depth) {
    std::vector<uint32_t> seq;
    while (ok() && i_ < s_.size() && s_[i_] != '|' && s_[i_] != ')') {
      if (s_[i_] == '$') {
        if (i_ + 1 == s_.size()) {  // the end anchor: a full match ends there anyway
          ++i_;
          break;
        }
        Unsupported("'$' before the end of the pattern");
        break;
      }
      std::vector<uint32_t> atom = ParseAtom(depth);
      if (!ok()) break;
      ParseQuantifiers(&atom);
      seq.insert(seq.end(), atom.begin(), atom.end());
    }
    return seq;
  }

  // {m}, {m,}, {m,n}, {,n} at i_: true and the counts if it is one (i_
  // past it), else false and i_ unchanged ('{' is then a literal).
  bool ParseBraces(int64_t* min, int64_t* max) {
    size_t k = i_ + 1;
    auto num = [&](int64_t* v) {
      const size_t start = k;
      *v = 0;
      while (k < s_.size() && s_[k] >= '0' && s_[k] <= '9') {
        *v = std::min<int64_t>(*v * 10 + (s_[k] - '0'), 1000000);
        ++k;
      }
      return k > start;
    };
    const bool has_min = num(min);
    if (k < s_.size() && s_[k] == '}') {
      if (!has_min) return false;
      *max = *min;
    } else if (k < s_.size() && s_[k] == ',') {
      ++k;
      if (!num(max)) *max = -1;
      if (!has_min) *min = 0;
      if (k >= s_.size() || s_[k] != '}' || (!has_min && *max < 0)) return false;
    } else {
      return false;
    }
    i_ = k + 1;
    return true;
  }

  void ParseQuantifiers(std::vector<uint32_t>* atom) {
    while (ok() && i_ < s_.size()) {
      const char c = s_[i_];
      int64_t min = 0, max = 0;
      if (c == '*' || c == '+' || c == '?') {
        ++i_;
        min = c == '+' ? 1 : 0;
        max = c == '?' ? 1 : -1;
      } else if (c != '{' || !ParseBraces(&min, &max)) {
        return;
      }
      if (max >= 0 && max < min)
        return Fail(fmt::format("repetition {{{},{}}}: max is below min", min, max));
      if (At('?'))
        ++i_;  // lazy: the same language
      else if (At('+'))
        return Unsupported("a possessive quantifier");
      const uint32_t x = atom->size() == 1 ? (*atom)[0] : b_.Group(*atom);
      uint32_t r = 0;
      if (min == 0 && max == -1)
        r = b_.Star(x);
      else if (min == 1 && max == -1)
        r = b_.Plus(x);
      else if (min == 0 && max == 1)
        r = b_.Optional(x);
      else
        r = b_.Repeat(x, min, max);
      *atom = {r};
      if (i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '+' || s_[i_] == '?'))
        return Fail(fmt::format("multiple repeat at offset {}", i_));
    }
  }

  std::vector<uint32_t> ParseAtom(int depth) {
    const char c = s_[i_];
    switch (c) {
      case '(': return {ParseGroup(depth)};
      case '[': return {ParseClass()};
      case '.': {
        ++i_;
        Ranges not_dot = {{'\n', '\n'}};
        if (dialect_.ecma) not_dot.insert(not_dot.end(), {{'\r', '\r'}, {0x2028, 0x2029}});
        return {b_.CodePointClass(std::move(not_dot), /*negate=*/true)};
      }
      case '^': Unsupported("'^' after the start of the pattern"); return {};
      case '*':
      case '+':
      case '?': Fail(fmt::format("nothing to repeat at offset {}", i_)); return {};
      case '\\': {
        Ranges r;
        uint32_t cp = 0;
        if (!ParseEscape(false, &cp, &r)) return {};
        if (!r.empty()) return {b_.CodePointClass(std::move(r), false)};
        return Literal(cp);
      }
      default: {
        uint32_t cp = 0;
        const size_t n = DecodeUtf8Char(s_, i_, &cp);
        if (n == 0) {
          Fail(fmt::format("invalid UTF-8 at offset {}", i_));
          return {};
        }
        i_ += n;
        return Literal(cp);
      }
    }
  }

  std::vector<uint32_t> Literal(uint32_t cp) {
    std::string bytes;
    AppendUtf8(cp, &bytes);
    std::vector<uint32_t> seq;
    b_.AppendLiteral(bytes, &seq);
    return seq;
  }

  uint32_t ParseGroup(int depth) {
    if (depth >= kMaxCfgNesting) {
      Fail(fmt::format("groups nested deeper than {}", kMaxCfgNesting));
      return 0;
    }
    ++i_;  // '('
    if (At('?')) {
      const std::string_view rest = s_.substr(i_);
      if (rest.starts_with("?:")) {
        i_ += 2;
      } else if (rest.starts_with("?P<") ||
                 (rest.starts_with("?<") && rest.size() > 2 && rest[2] != '=' && rest[2] != '!')) {
        const size_t close = s_.find('>', i_);
        if (close == std::string_view::npos) {
          Fail("unterminated group name");
          return 0;
        }
        i_ = close + 1;
      } else if (rest.starts_with("?=") || rest.starts_with("?!")) {
        Unsupported("lookahead");
        return 0;
      } else if (rest.starts_with("?<=") || rest.starts_with("?<!")) {
        Unsupported("lookbehind");
        return 0;
      } else if (rest.starts_with("?P=")) {
        Unsupported("a backreference");
        return 0;
      } else if (rest.starts_with("?>")) {
        Unsupported("an atomic group");
        return 0;
      } else if (rest.starts_with("?#")) {
        Unsupported("a comment group");
        return 0;
      } else {
        Unsupported("an inline flag or extension group '(?'");
        return 0;
      }
    }
    const uint32_t r = ParseAlternation(depth + 1);
    if (!ok()) return 0;
    if (!At(')')) {
      Fail("missing ')'");
      return 0;
    }
    ++i_;
    return r;
  }

  // After a '\\' at i_: a class shorthand (into *ranges) or one code point.
  bool ParseEscape(bool in_class, uint32_t* cp, Ranges* ranges) {
    ++i_;
    if (i_ >= s_.size()) {
      Fail("the pattern ends in a '\\'");
      return false;
    }
    const char e = s_[i_];
    if (ShorthandClass(e, ranges, dialect_.ecma)) {
      ++i_;
      return true;
    }
    if (dialect_.ecma &&
        (e == 'a' || e == 'U' || (e == 'x' && i_ + 1 < s_.size() && s_[i_ + 1] == '{'))) {
      // ECMA-262 (without the u flag) reads these as other things.
      Unsupported(fmt::format("the escape '\\{}' (ECMA-262 reads it differently)", e));
      return false;
    }
    int digits = 0;
    switch (e) {
      case 'n': *cp = '\n'; break;
      case 't': *cp = '\t'; break;
      case 'r': *cp = '\r'; break;
      case 'f': *cp = '\f'; break;
      case 'v': *cp = '\v'; break;
      case 'a': *cp = '\a'; break;
      case '0': *cp = 0; break;
      case 'x': digits = 2; break;
      case 'u': digits = 4; break;
      case 'U': digits = 8; break;
      case 'b':
        if (in_class) {
          *cp = '\b';
          break;
        }
        [[fallthrough]];
      case 'B':
      case 'A':
      case 'Z':
      case 'z':
      case 'G': Unsupported(fmt::format("the anchor '\\{}'", e)); return false;
      case 'p':
      case 'P': Unsupported("a Unicode property class"); return false;
      case 'k': Unsupported("a backreference"); return false;
      default:
        if (e >= '1' && e <= '9') {
          Unsupported("a backreference");
          return false;
        }
        if (IsAlnum(e)) {
          Fail(fmt::format("unknown escape '\\{}' at offset {}", e, i_ - 1));
          return false;
        }
        {
          const size_t n = DecodeUtf8Char(s_, i_, cp);
          if (n == 0) {
            Fail(fmt::format("invalid UTF-8 at offset {}", i_));
            return false;
          }
          i_ += n;
          return true;
        }
    }
    ++i_;
    if (digits == 0) return true;
    uint32_t v = 0;
    if (e == 'x' && At('{')) {  // \x{H...}
      ++i_;
      int n = 0;
      while (i_ < s_.size() && HexDigitValue(s_[i_]) >= 0 && n < 8)
        v = (v << 4) | HexDigitValue(s_[i_++]), ++n;
      if (n == 0 || !At('}')) {
        Fail("bad '\\x{...}' escape");
        return false;
      }
      ++i_;
    } else {
      for (int k = 0; k < digits; ++k) {
        const int h = i_ < s_.size() ? HexDigitValue(s_[i_]) : -1;
        if (h < 0) {
          Fail(fmt::format("'\\{}' needs {} hex digits", e, digits));
          return false;
        }
        v = (v << 4) | static_cast<uint32_t>(h);
        ++i_;
      }
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
      Fail(fmt::format("escape U+{:X} is not a Unicode character", v));
      return false;
    }
    *cp = v;
    return true;
  }

  // One class member at i_: a code point, or a shorthand into *ranges.
  bool ClassMember(uint32_t* cp, Ranges* ranges) {
    if (s_[i_] == '\\') return ParseEscape(true, cp, ranges);
    const size_t n = DecodeUtf8Char(s_, i_, cp);
    if (n == 0) {
      Fail(fmt::format("invalid UTF-8 at offset {}", i_));
      return false;
    }
    i_ += n;
    return true;
  }

  uint32_t ParseClass() {
    if (dialect_.ecma) {  // ECMA-262: "[]" matches nothing, "[^]" anything
      const size_t close = i_ + 1 + (s_.substr(i_ + 1, 1) == "^");
      if (close < s_.size() && s_[close] == ']') {
        i_ = close;
        Unsupported("an empty class '[]' or '[^]'");
        return 0;
      }
    }
    const CharClassDialect dialect{
        .read_member = [this](uint32_t* cp, Ranges* set) { return ClassMember(cp, set); },
        .fail = [this](std::string_view what) { Fail(std::string(what)); },
        .leading_bracket_is_member = true,
    };
    CharClass c;
    if (!ParseCharClass(s_, &i_, dialect, &c)) return 0;
    return b_.CodePointClass(std::move(c.ranges), c.negate);
  }

  std::string_view s_;
  RegexDialect dialect_;
  size_t i_ = 0;
  Builder b_;
  Status error_;
};

}  // namespace brisk::regex_parser
