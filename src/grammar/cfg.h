// Context-free grammars over bytes: the rule form that GBNF (gbnf.h),
// regular expressions (regex_grammar.h) and choice lists compile to, and
// that CfgMatcher (cfg_matcher.h) recognizes byte by byte.
//
// A grammar is a set of rules (nonterminals), each a list of alternatives;
// an alternative is a sequence of symbols. A terminal symbol is a set of
// bytes (a character class over ASCII is one terminal; a class with
// non-ASCII code points becomes a rule whose alternatives are UTF-8
// byte-range sequences). Repetition compiles to left recursion
// (R ::= R X | e), the cheap case for an Earley recognizer.
//
// CfgBuilder::Finish() removes every alternative that uses an unproductive
// rule (one that derives no byte string), so that a recognizer may accept a
// byte exactly when some accepted text still starts with the bytes so far;
// a root that derives nothing is an InvalidArgument.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"
#include "util/utf8.h"  // AppendUtf8

namespace brisk {

// Repetition counts are at most 100000, and x{m,n} has at most 1000
// optional repeats (n - m); past them a compile is an InvalidArgument.

// A set of bytes: bit b of word b / 64.
using ByteSet = std::array<uint64_t, 4>;

inline bool ByteSetHas(const ByteSet& s, uint8_t b) { return (s[b >> 6] >> (b & 63)) & 1; }
inline void ByteSetAdd(ByteSet& s, uint8_t lo, uint8_t hi) {
  for (unsigned b = lo; b <= hi; ++b) s[b >> 6] |= uint64_t{1} << (b & 63);
}

// Symbols in productions: a rule id, a terminal (kTerminalBit | byte-set
// index) or the end of a production (kEndBit | its rule).
inline constexpr uint32_t kTerminalBit = 1u << 31;
inline constexpr uint32_t kEndBit = 1u << 30;
inline constexpr uint32_t kSymbolMask = kEndBit - 1;

// Limits on what a compile may build (a regex like a{1000}{1000} would
// otherwise expand without bound).
inline constexpr size_t kMaxCfgSymbols = size_t{1} << 20;
inline constexpr size_t kMaxCfgRules = size_t{1} << 18;
// Nesting depth of groups a parser accepts (keeps recursion bounded).
inline constexpr int kMaxCfgNesting = 200;

struct CfgGrammar {
  // Every production's symbols back to back, each production ending in
  // kEndBit | lhs. An Earley item's dot is an index into `syms`.
  std::vector<uint32_t> syms;
  // Productions of rule r start at syms[prod_start[rule_prods[r] ...]]:
  // rule r owns prod_start[rule_first[r] .. rule_first[r + 1]).
  std::vector<uint32_t> prod_start;
  std::vector<uint32_t> rule_first;
  std::vector<uint8_t> nullable;  // per rule: derives the empty string
  std::vector<ByteSet> byte_sets;
  std::vector<std::string> rule_names;
  // The start production: syms[start_pos] is the root rule, syms[start_pos
  // + 1] its end marker (rule id `start_rule`).
  uint32_t start_rule = 0;
  uint32_t start_pos = 0;

  size_t num_rules() const { return rule_first.empty() ? 0 : rule_first.size() - 1; }
};

// Builds a CfgGrammar. Errors (limits) are sticky: the first one is what
// Finish() returns.
class CfgBuilder {
 public:
  // A new rule (nonterminal); `name` is for messages. Returns its symbol.
  uint32_t NewRule(std::string name);
  // Adds one alternative to rule `rule` (a symbol from NewRule()).
  void AddAlt(uint32_t rule, std::vector<uint32_t> syms);
  // The terminal for a byte set.
  uint32_t Terminal(const ByteSet& set);
  uint32_t Byte(uint8_t b);
  // Appends the terminals of `bytes` to `seq`.
  void AppendLiteral(std::string_view bytes, std::vector<uint32_t>* seq);

  // A symbol matching one UTF-8 encoded code point in `ranges` (inclusive
  // code point ranges; surrogates never match). `negate`: every code point
  // not in them. ASCII-only sets are a single terminal.
  uint32_t CodePointClass(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negate);

  // Symbols for x*, x+, x? and x{min,max} (max < 0: unbounded).
  uint32_t Star(uint32_t x);
  uint32_t Plus(uint32_t x);
  uint32_t Optional(uint32_t x);
  uint32_t Repeat(uint32_t x, int64_t min, int64_t max);
  // A rule whose one alternative is `seq`.
  uint32_t Group(std::vector<uint32_t> seq);

  // Records the first error (later calls keep building but Finish fails).
  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
  }
  bool failed() const { return !error_.ok(); }
  size_t num_rules() const { return alts_.size(); }
  const std::string& rule_name(uint32_t r) const { return names_[r]; }

  // The grammar with `root` as its start symbol.
  Expected<std::shared_ptr<const CfgGrammar>> Finish(uint32_t root);

 private:
  bool Budget(size_t more_syms);

  std::vector<std::string> names_;
  std::vector<std::vector<std::vector<uint32_t>>> alts_;
  std::vector<ByteSet> sets_;
  size_t total_syms_ = 0;
  Status error_;
};

// The grammar accepting exactly the strings of `choices` (non-empty).
Expected<std::shared_ptr<const CfgGrammar>> CompileChoice(const std::vector<std::string>& choices);

// Appends the UTF-8 byte-range sequences encoding every code point of
// [lo, hi] (a range within one encoded length and without surrogates is
// split so that each sequence is a product of byte ranges). For tests and
// CfgBuilder.
void Utf8RangeSequences(uint32_t lo, uint32_t hi,
                        std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out);

// The UTF-8 character at s[i]: its length (and *cp), or 0 if the bytes
// there are not one valid UTF-8 character.
size_t DecodeUtf8Char(std::string_view s, size_t i, uint32_t* cp);

}  // namespace brisk
