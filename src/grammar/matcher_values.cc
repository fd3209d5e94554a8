// GrammarMatcher's per-kind steps: one byte into the frame of one string,
// number, literal, object or array. A string with a pattern (json_grammar.h)
// follows its DFA.
#include <algorithm>
#include <cmath>

#include "grammar/matcher.h"
#include "grammar/matcher_phases.h"
#include "grammar/string_lexer.h"

namespace brisk {
namespace {

constexpr double kPow10Neg[] = {1,    1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7, 1e-8,
                                1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16};
// Bounded numbers keep their magnitude in a double: at most this many
// integer digits (exact below 2^53) and fraction digits.
constexpr double kMaxBoundedInt = 1e15;
constexpr uint32_t kMaxBoundedFrac = 15;

bool IsDigit(uint8_t c) { return c >= '0' && c <= '9'; }

// Whether some value of sign `neg` and magnitude in [a, b) lies in the
// spec's range. For integers the bounds are integral (the compiler rounds
// them inward), so "[a, b) holds an integer in range" is the same test.
bool Intersects(const NumberSpec& s, bool neg, double a, double b) {
  double lo_v, hi_v;  // the values, an interval open at one end
  if (!neg) {
    lo_v = a, hi_v = b;  // [a, b)
    if (s.has_hi && (s.hi_exclusive ? !(lo_v < s.hi) : !(lo_v <= s.hi))) return false;
    if (s.has_lo && !(hi_v > s.lo)) return false;
  } else {
    lo_v = -b, hi_v = -a;  // (-b, -a]
    if (s.has_lo && (s.lo_exclusive ? !(hi_v > s.lo) : !(hi_v >= s.lo))) return false;
    if (s.has_hi && !(lo_v < s.hi)) return false;
  }
  return true;
}

// Whether the number prefix in `f` (after its last byte) can still end in range.
bool NumberViable(const NumberSpec& s, const MatchFrame& f) {
  const bool neg = f.flags & 1;
  switch (f.phase) {
    case phase::kNumSign: return Intersects(s, true, 0, INFINITY);
    case phase::kNumZero: return Intersects(s, neg, 0, s.integer ? 0.5 : 1);
    case phase::kNumInt: {
      // Appending k more digits (k = 0 includes a fraction) reaches
      // [v * 10^k, (v + 1) * 10^k); an integer that ends now is just v.
      // Only up to the digit cap (StepNumber).
      double a = f.num, b = f.num + 1;
      for (int k = 0; a < 10 * kMaxBoundedInt; ++k, a *= 10, b *= 10)
        if (Intersects(s, neg, a, s.integer && k == 0 ? a + 0.5 : b)) return true;
      return false;
    }
    case phase::kNumDot: return Intersects(s, neg, f.num, f.num + 1);
    case phase::kNumFrac: return Intersects(s, neg, f.num, f.num + kPow10Neg[f.a]);
    default: return false;  // exponents are not allowed with bounds
  }
}

}  // namespace

GrammarMatcher::StepResult GrammarMatcher::StepString(MatchFrame& f, const GrammarNode& n,
                                                      uint8_t byte) const {
  if (f.phase == phase::kStart) {
    if (byte != '"') return {Outcome::kReject};
    f.phase = phase::kStrBody;
    if (n.pattern != kNoNode) f.b = g_->patterns[n.pattern].start;
    return {Outcome::kContinue};
  }
  using string_lexer::Lexed;
  const Lexed lexed = string_lexer::Lex(f.lex, f.lex_aux, f.flags, byte, /*canonical=*/false);
  if (n.pattern != kNoNode) {
    // The DFA reads the contents (its lengths included); the lexer only
    // tells the closing quote from an escaped one.
    const ByteDfa& dfa = g_->patterns[n.pattern];
    if (lexed == Lexed::kBad) return {Outcome::kReject};
    if (lexed == Lexed::kClose) return {dfa.accepting[f.b] ? Outcome::kDone : Outcome::kReject};
    const uint32_t next = dfa.Next(f.b, byte);
    if (next == kDfaDead) return {Outcome::kReject};
    if (dfa.max_chars != kUnbounded) {
      const uint32_t chars = f.a + (lexed == Lexed::kCharStart ? 1 : 0);
      if (uint64_t{chars} + dfa.chars_to_accept[next] > dfa.max_chars) return {Outcome::kReject};
      f.a = chars;
    }
    f.b = next;
    return {Outcome::kContinue};
  }
  switch (lexed) {
    case Lexed::kBad: return {Outcome::kReject};
    case Lexed::kClose: return {f.a >= n.min_len ? Outcome::kDone : Outcome::kReject};
    case Lexed::kCharStart:
      if (n.max_len != kUnbounded && f.a >= n.max_len) return {Outcome::kReject};
      ++f.a;
      return {Outcome::kContinue};
    case Lexed::kCharMore: return {Outcome::kContinue};
  }
  return {Outcome::kReject};
}

GrammarMatcher::StepResult GrammarMatcher::StepNumber(MatchFrame& f, const NumberSpec& s,
                                                      uint8_t byte) const {
  const bool bounded = s.bounded();
  const bool digit = IsDigit(byte);
  const bool exp = (byte == 'e' || byte == 'E') && !s.integer && !bounded;
  bool consumed = true;
  switch (f.phase) {
    case phase::kStart:
    case phase::kNumSign:
      if (byte == '-' && f.phase == phase::kStart) {
        f.flags |= 1;
        f.phase = phase::kNumSign;
      } else if (byte == '0') {
        f.phase = phase::kNumZero;
      } else if (digit) {
        f.phase = phase::kNumInt, f.num = byte - '0';
      } else {
        return {Outcome::kReject};
      }
      break;
    case phase::kNumZero:
    case phase::kNumInt:
      if (digit && f.phase == phase::kNumInt) {
        if (bounded && f.num >= kMaxBoundedInt) return {Outcome::kReject};
        f.num = f.num * 10 + (byte - '0');
      } else if (byte == '.' && !s.integer) {
        f.phase = phase::kNumDot;
      } else if (exp) {
        f.phase = phase::kNumExp;
      } else {
        consumed = false;
      }
      break;
    case phase::kNumDot:
    case phase::kNumFrac:
      if (digit) {
        if (bounded && f.a >= kMaxBoundedFrac) return {Outcome::kReject};
        ++f.a;
        f.num += (byte - '0') * kPow10Neg[f.a];
        f.phase = phase::kNumFrac;
      } else if (f.phase == phase::kNumDot) {
        return {Outcome::kReject};
      } else if (exp) {
        f.phase = phase::kNumExp;
      } else {
        consumed = false;
      }
      break;
    case phase::kNumExp:
      if (byte == '+' || byte == '-') {
        f.phase = phase::kNumExpSign;
      } else if (digit) {
        f.phase = phase::kNumExpDigits;
      } else {
        return {Outcome::kReject};
      }
      break;
    case phase::kNumExpSign:
      if (!digit) return {Outcome::kReject};
      f.phase = phase::kNumExpDigits;
      break;
    case phase::kNumExpDigits: consumed = digit; break;
    default: return {Outcome::kReject};
  }
  // A byte that continues nothing ends an accepting number; the byte then
  // belongs to whatever follows the number.
  if (!consumed) return {CanFinish(f) ? Outcome::kDoneRefeed : Outcome::kReject};
  if (bounded && !NumberViable(s, f)) return {Outcome::kReject};
  return {Outcome::kContinue};
}

GrammarMatcher::StepResult GrammarMatcher::StepLiteral(MatchFrame& f, const ByteTrie& trie,
                                                       uint8_t byte) const {
  const uint32_t at = f.phase == phase::kStart ? 0 : f.a;
  const uint32_t next = trie.Child(at, byte);
  if (next == ByteTrie::kNone) {
    if (f.phase != phase::kStart && trie.Terminal(at) >= 0) return {Outcome::kDoneRefeed};
    return {Outcome::kReject};
  }
  f.phase = 1;
  f.a = next;
  if (trie.Terminal(next) >= 0 && !trie.HasChildren(next)) return {Outcome::kDone};
  return {Outcome::kContinue};
}

namespace {

// Whether the key-trie node has a key with index in [p, r] below it.
bool SubtreeHasKeyIn(const ObjectSpec& s, uint32_t node, uint32_t p, uint32_t r) {
  const uint64_t* w = s.subtree_keys.data() + size_t{node} * s.words_per_node;
  for (uint32_t k = p; k <= r;) {
    const uint64_t word = w[k / 64] >> (k % 64);
    const uint32_t span = std::min<uint32_t>(64 - k % 64, r - k + 1);
    const uint64_t m = span == 64 ? ~uint64_t{0} : ((uint64_t{1} << span) - 1);
    if (word & m) return true;
    k += span;
  }
  return false;
}

}  // namespace

GrammarMatcher::NextMembers GrammarMatcher::ObjectNextMembers(const ObjectSpec& s,
                                                              const MatchFrame& f) const {
  // A member may start only if the object can still be completed after it:
  // the required properties left fit under maxProperties, and (without
  // extra keys) enough listed ones are left to reach minProperties.
  const auto n = static_cast<uint32_t>(s.props.size());
  const uint32_t p = f.a, c = f.count;
  const uint32_t req = s.required_from[p];
  NextMembers m;
  m.close = req == 0 && c >= s.min_props;
  // Room for a member that is not required (optional or extra).
  const bool room = uint64_t{c} + 1 + req <= s.max_props;
  const bool has_extra = s.additional != kNoNode || s.key_pattern != kNoNode;
  m.extra = req == 0 && room && has_extra;
  if (p < n) {
    // Listed keys allowed next: [p, r], the first required one included.
    const uint32_t r = std::min(s.first_required_from[p], n - 1);
    m.lo = room ? p : r;
    m.hi = r;
    // Key k leaves at most n - k - 1 listed ones: c + n - k >= min_props.
    if (!has_extra) {
      if (uint64_t{c} + n < s.min_props) return m.lo = 1, m.hi = 0, m;
      m.hi = static_cast<uint32_t>(std::min<uint64_t>(m.hi, uint64_t{c} + n - s.min_props));
    }
    if (!room && req == 0) m.lo = 1, m.hi = 0;
  }
  return m;
}

GrammarMatcher::StepResult GrammarMatcher::StepObject(MatchFrame& f, const ObjectSpec& s,
                                                      uint8_t byte) const {
  const NextMembers m = ObjectNextMembers(s, f);
  const bool listed_ok = m.lo <= m.hi;
  // Extra keys: any (additionalProperties), or those matching the pattern.
  const bool any_key = s.additional != kNoNode && m.extra;
  const ByteDfa* key_dfa =
      s.key_pattern != kNoNode && m.extra ? &g_->patterns[s.key_pattern] : nullptr;
  const auto start_key = [&]() -> StepResult {
    if (!listed_ok && !m.extra) return {Outcome::kReject};
    f.phase = phase::kObjKey;
    f.lex = f.lex_aux = f.flags = 0;
    f.b = 0;
    f.c = key_dfa ? key_dfa->start : kDfaDead;  // the key's DFA state
    return {Outcome::kContinue};
  };
  switch (f.phase) {
    case phase::kStart:
      if (byte != '{') return {Outcome::kReject};
      f.phase = phase::kObjFirst;
      f.a = 0;
      return {Outcome::kContinue};
    case phase::kObjFirst:
      if (byte == '}') return {m.close ? Outcome::kDone : Outcome::kReject};
      if (byte == '"') return start_key();
      return {Outcome::kReject};
    case phase::kObjKeyStart:
      if (byte == '"') return start_key();
      return {Outcome::kReject};
    case phase::kObjKey: {
      using string_lexer::Lexed;
      const Lexed lx = string_lexer::Lex(f.lex, f.lex_aux, f.flags, byte, /*canonical=*/true);
      if (lx == Lexed::kBad) return {Outcome::kReject};
      if (lx == Lexed::kClose) {
        const int32_t k = f.b == phase::kOffTrie ? -1 : s.keys.Terminal(f.b);
        if (k >= 0) {
          // A listed key: only if it may come here (not an extra key either).
          if (!listed_ok || static_cast<uint32_t>(k) < m.lo || static_cast<uint32_t>(k) > m.hi)
            return {Outcome::kReject};
          f.c = static_cast<uint32_t>(k);
        } else if (key_dfa && f.c != kDfaDead && key_dfa->accepting[f.c]) {
          f.c = phase::kPatternKey;
        } else if (any_key) {
          f.c = phase::kAdditionalKey;
        } else {
          return {Outcome::kReject};
        }
        f.phase = phase::kObjColon;
        return {Outcome::kContinue};
      }
      // Some key must still be reachable: a listed one that may come here
      // (the trie), any extra key, or one the pattern's DFA can still accept.
      bool alive = any_key;
      if (f.b != phase::kOffTrie) {
        const uint32_t next = s.keys.Child(f.b, byte);
        // Extra keys follow the trie too, to tell a listed key apart.
        f.b = next != ByteTrie::kNone ? next : phase::kOffTrie;
        alive =
            alive || (f.b != phase::kOffTrie && listed_ok && SubtreeHasKeyIn(s, f.b, m.lo, m.hi));
      }
      if (key_dfa && f.c != kDfaDead) {
        f.c = key_dfa->Next(f.c, byte);
        alive = alive || f.c != kDfaDead;
      }
      return {alive ? Outcome::kContinue : Outcome::kReject};
    }
    case phase::kObjColon:
      if (byte != ':') return {Outcome::kReject};
      f.phase = phase::kObjValueStart;
      return {Outcome::kContinue};
    case phase::kObjValueStart:
      f.phase = phase::kObjValue;
      return {Outcome::kPush, f.c == phase::kAdditionalKey ? s.additional
                              : f.c == phase::kPatternKey  ? s.pattern_value
                                                           : s.props[f.c].value};
    case phase::kObjAfter:
      if (byte == '}') return {m.close ? Outcome::kDone : Outcome::kReject};
      if (byte == ',' && (listed_ok || m.extra)) {
        f.phase = phase::kObjKeyStart;
        return {Outcome::kContinue};
      }
      return {Outcome::kReject};
    default: return {Outcome::kReject};
  }
}

GrammarMatcher::StepResult GrammarMatcher::StepArray(MatchFrame& f, const ArraySpec& s,
                                                     uint8_t byte) const {
  const auto item_at = [&](uint32_t i) -> uint32_t {
    if (i >= s.max_items) return kNoNode;
    return i < s.prefix.size() ? s.prefix[i] : s.items;
  };
  const std::string& sep = s.separator;  // non-empty: a bare sequence
  switch (f.phase) {
    case phase::kStart:
      f.a = 0;
      if (!sep.empty()) {  // no '[': this byte starts the first item
        if (item_at(0) == kNoNode) return {Outcome::kReject};
        f.phase = phase::kArrValue;
        return {Outcome::kPush, item_at(0)};
      }
      if (byte != '[') return {Outcome::kReject};
      f.phase = phase::kArrFirst;
      return {Outcome::kContinue};
    case phase::kArrFirst:
      if (byte == ']') return {s.min_items == 0 ? Outcome::kDone : Outcome::kReject};
      if (item_at(0) == kNoNode) return {Outcome::kReject};
      f.phase = phase::kArrValue;
      return {Outcome::kPush, item_at(0)};
    case phase::kArrAfter:
      if (!sep.empty()) {
        if (byte != static_cast<uint8_t>(sep[0]) || item_at(f.a) == kNoNode)
          return {Outcome::kReject};
        f.b = 1;
        f.phase = sep.size() == 1 ? phase::kArrItemStart : phase::kArrSep;
        return {Outcome::kContinue};
      }
      if (byte == ']') return {f.a >= s.min_items ? Outcome::kDone : Outcome::kReject};
      if (byte == ',' && item_at(f.a) != kNoNode) {
        f.phase = phase::kArrItemStart;
        return {Outcome::kContinue};
      }
      return {Outcome::kReject};
    case phase::kArrSep:
      if (f.b >= sep.size() || byte != static_cast<uint8_t>(sep[f.b])) return {Outcome::kReject};
      if (++f.b == sep.size()) f.phase = phase::kArrItemStart;
      return {Outcome::kContinue};
    case phase::kArrItemStart: f.phase = phase::kArrValue; return {Outcome::kPush, item_at(f.a)};
    default: return {Outcome::kReject};
  }
}

}  // namespace brisk
