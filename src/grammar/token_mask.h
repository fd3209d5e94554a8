// Allowed-token masks for a GrammarMatcher state over a whole vocabulary.
//
// TokenTrie is built once per vocabulary: every token's bytes (as the
// detokenizer emits them: Tokenizer::TokenToPiece, so SentencePiece '▁' is a
// space and <0xAB> is byte 0xAB) in one byte trie, laid out in preorder so a
// rejected subtree is skipped with one jump. Control tokens (no text) are not
// in it; end-of-generation tokens are allowed exactly when the matcher
// CanEnd().
//
// TokenMasker walks the trie depth-first carrying one matcher copy per
// depth; a byte the matcher rejects prunes the whole subtree. Fast path:
// inside a string between characters, tokens made only of complete UTF-8
// characters without '"', '\\' or control bytes ("plain" tokens) are
// accepted iff their code point count fits the string's remaining length,
// so a precomputed bitmask per count is OR-ed in and every subtree holding
// only plain tokens is skipped. Inside a string with a pattern, the walk
// follows the string's DFA alone (a table lookup per trie node, no matcher
// copy) until a token closes the string; from there the matcher takes over.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "grammar/matcher.h"
#include "model/tokenizer.h"

namespace brisk {

// A bit per token id: bit i of word i / 64.
using TokenBitmask = std::vector<uint64_t>;

inline bool MaskHas(const TokenBitmask& m, int32_t id) {
  return (m[static_cast<size_t>(id) / 64] >> (id % 64)) & 1;
}

class TokenTrie {
 public:
  static std::unique_ptr<TokenTrie> Build(const Tokenizer& tokenizer);

  int32_t vocab_size() const { return vocab_size_; }
  size_t num_nodes() const { return byte_.size(); }
  size_t max_depth() const { return max_depth_; }

 private:
  friend class TokenMasker;
  friend class CfgTokenMasker;  // cfg_mask.h walks the same trie
  // Plain-token masks for a remaining budget of 0..kMaxPlainChars code points.
  static constexpr int kMaxPlainChars = 24;

  int32_t vocab_size_ = 0;
  size_t words_ = 0;
  size_t max_depth_ = 0;
  // Preorder nodes; node 0 is the root (no byte).
  std::vector<uint8_t> byte_;
  std::vector<uint8_t> depth_;       // clamped: tokens are at most 255 bytes in the trie
  std::vector<uint32_t> next_;       // first node after this node's subtree
  std::vector<uint32_t> tok_begin_;  // token ids ending here: ids_[tok_begin_, tok_end_)
  std::vector<uint32_t> tok_end_;
  std::vector<uint8_t> all_plain_;  // every token below (and here) is plain
  std::vector<int32_t> ids_;
  std::vector<int32_t> eog_;
  // plain_upto_[k]: plain tokens of at most k code points; the last entry
  // holds every plain token.
  std::vector<TokenBitmask> plain_upto_;
};

class TokenMasker {
 public:
  explicit TokenMasker(const TokenTrie* trie);

  // Bit t set iff token t may come next: its bytes advance `m` (EOG tokens:
  // m.CanEnd()). `out` is resized to the vocabulary's word count.
  void Compute(const GrammarMatcher& m, TokenBitmask* out);

  // The same as Compute() by brute force: every token's bytes through a copy
  // of `m`. For tests.
  static void ComputeReference(const Tokenizer& tokenizer, const GrammarMatcher& m,
                               TokenBitmask* out);

  // Trie nodes visited by the last Compute() (for benchmarks).
  size_t last_visited() const { return visited_; }

 private:
  const TokenTrie* trie_;
  std::vector<GrammarMatcher> states_;  // states_[d]: after the first d bytes of the path
  // The pattern-string walk: the frame after the first d bytes, whether the
  // path has left the string by then (states_[d] holds the matcher), and
  // the path's bytes.
  std::vector<MatchFrame> frames_;
  std::vector<uint8_t> left_string_;
  std::vector<uint8_t> path_;

  // Compute()'s trie walk inside a string with a pattern.
  void WalkPattern(const GrammarMatcher& m, const ByteDfa& dfa, const MatchFrame& top,
                   TokenBitmask* out);
  size_t visited_ = 0;
};

// Expands a bitmask to one byte per token (the sampler's mask form) for a
// logits row of `vocab` entries (ids past the bitmask get 0).
void ExpandMask(const TokenBitmask& bits, size_t vocab, std::vector<uint8_t>* out);

}  // namespace brisk
