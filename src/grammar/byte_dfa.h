// Finite automata over bytes for string contents a regular language
// constrains (JSON Schema `pattern` and `format`, string_pattern.h): an
// NFA with epsilon moves, its subset construction into a DFA, the product
// of two DFAs (both constraints), the product of a DFA with a character
// counter (minLength / maxLength), and trimming.
//
// Every DFA these functions return is trimmed: each state is reachable and
// can still reach an accepting state, so a matcher that follows it never
// walks into a dead end. A language with no string at all is the empty
// DFA (no states).
//
// Sizes are bounded: kMaxNfaStates for an NFA a caller builds (the caller
// checks), kMaxDfaStates states and kMaxDfaTransitions table entries for
// any DFA, kMaxDeterminizeWork NFA states visited by one subset
// construction (so a request's pattern compiles in bounded time); past
// them a construction is a ResourceExhausted (the caller reports the
// keyword as not enforced).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace brisk {

inline constexpr uint32_t kDfaDead = 0xFFFFFFFFu;
inline constexpr size_t kMaxNfaStates = size_t{1} << 17;
inline constexpr size_t kMaxDfaStates = size_t{1} << 15;
inline constexpr size_t kMaxDfaTransitions = size_t{1} << 21;
inline constexpr size_t kMaxDeterminizeWork = size_t{1} << 26;

struct ByteNfa {
  struct Edge {
    uint8_t lo = 0, hi = 0;  // inclusive byte range
    uint32_t to = 0;
  };
  std::vector<std::vector<Edge>> edges;  // per state
  std::vector<std::vector<uint32_t>> eps;
  uint32_t start = 0;
  uint32_t accept = 0;

  uint32_t AddState() {
    edges.emplace_back();
    eps.emplace_back();
    return static_cast<uint32_t>(edges.size() - 1);
  }
  void AddEdge(uint32_t from, uint8_t lo, uint8_t hi, uint32_t to) {
    edges[from].push_back({lo, hi, to});
  }
  void AddEps(uint32_t from, uint32_t to) {
    if (from != to) eps[from].push_back(to);
  }
  size_t size() const { return edges.size(); }
};

struct ByteDfa {
  // Bytes that every transition treats alike share a class.
  std::array<uint8_t, 256> byte_class{};
  uint32_t num_classes = 1;
  std::vector<uint32_t> next;  // [state * num_classes + class]: a state or kDfaDead
  std::vector<uint8_t> accepting;
  uint32_t start = 0;
  // An upper bound on the characters of the contents (LimitJsonChars):
  // a byte is allowed only if the characters so far, with the one it
  // starts, plus chars_to_accept[the next state] stay within it.
  uint32_t max_chars = 0xFFFFFFFFu;
  std::vector<uint32_t> chars_to_accept;  // per state, when max_chars is set
  // Set when a grammar takes the DFA (JsonGrammar::AddPatternString):
  // unique in the process, so a cache of per-state results keys on it and
  // never on an address that a later grammar may reuse.
  uint64_t uid = 0;
  uint32_t max_chars_to_accept = 0;  // the largest chars_to_accept entry

  size_t num_states() const { return accepting.size(); }
  bool empty() const { return accepting.empty(); }
  uint32_t Next(uint32_t state, uint8_t byte) const {
    return next[size_t{state} * num_classes + byte_class[byte]];
  }
  // Whether the whole of `bytes` (JSON string contents) is accepted.
  bool Accepts(std::string_view bytes) const;
};

Expected<ByteDfa> Determinize(const ByteNfa& nfa);
// Strings both accept.
Expected<ByteDfa> Intersect(const ByteDfa& a, const ByteDfa& b);
// `dfa` reads JSON string contents (string_lexer.h: escapes and UTF-8 are
// one character each); the strings it accepts with a character count in
// [min_chars, max_chars] (max_chars = 0xFFFFFFFF: no upper bound). The
// lower bound is a counter in the states (up to min_chars + 1 copies of
// each); the upper bound is max_chars / chars_to_accept (exact: the
// shortest way to an accepting state must fit).
Expected<ByteDfa> LimitJsonChars(const ByteDfa& dfa, uint32_t min_chars, uint32_t max_chars);
// The reachable states that can reach an accepting state, renumbered.
ByteDfa Trim(const ByteDfa& dfa);

}  // namespace brisk
