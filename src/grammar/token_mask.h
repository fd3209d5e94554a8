// Allowed-token masks for a GrammarMatcher state over a whole vocabulary.
//
// TokenTrie is built once per vocabulary: every token's bytes (as the
// detokenizer emits them: TokenVocab, so SentencePiece '▁' is a
// space and <0xAB> is byte 0xAB) in one byte trie, laid out in preorder so a
// rejected subtree is skipped with one jump. Control tokens (no text) are not
// in it; end-of-generation tokens are allowed exactly when the matcher
// CanEnd().
//
// TokenMasker walks the trie depth-first carrying one matcher copy per
// depth; a byte the matcher rejects prunes the whole subtree. Fast path:
// inside a string between characters (in every live thread), tokens made
// only of complete UTF-8 characters without '"', '\\' or control bytes
// ("plain" tokens) are accepted iff their code point count fits the largest
// remaining length, so a precomputed bitmask per count is OR-ed in and
// every subtree holding only plain tokens is skipped. Inside a string with a pattern, the walk
// follows the string's DFA alone (a table lookup per trie node, no matcher
// copy) until a token closes the string; from there the matcher takes over.
// That walk depends only on the DFA state and the lexer state (when no
// maxLength can bind within one token), so it is cached per state: a
// long free-text string with a pattern costs one walk per state, not one
// per token.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/token_vocab.h"

namespace brisk {

// A bit per token id: bit i of word i / 64.
using TokenBitmask = std::vector<uint64_t>;

inline bool MaskHas(const TokenBitmask& m, int32_t id) {
  return (m[static_cast<size_t>(id) / 64] >> (id % 64)) & 1;
}

class TokenTrie {
 public:
  static std::unique_ptr<TokenTrie> Build(const TokenVocab& vocab);

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
  // Plain tokens longer than kMaxPlainChars code points, (code points, id)
  // by length: a budget between kMaxPlainChars and the longest of them
  // takes plain_upto_[kMaxPlainChars] plus those that fit.
  std::vector<std::pair<int, int32_t>> long_plain_;
};

class TokenMasker {
 public:
  explicit TokenMasker(const TokenTrie* trie);

  // Bit t set iff token t may come next: its bytes advance `m` (EOG tokens:
  // m.CanEnd()). `out` is resized to the vocabulary's word count.
  void Compute(const GrammarMatcher& m, TokenBitmask* out);

  // The same as Compute() by brute force: every token's bytes through a copy
  // of `m`. For tests.
  static void ComputeReference(const TokenVocab& vocab, const GrammarMatcher& m, TokenBitmask* out);

  // Trie nodes visited by the last Compute() (for benchmarks).
  size_t last_visited() const { return visited_; }
  // Masks inside a pattern string answered from the per-DFA-state cache.
  size_t pattern_cache_hits() const { return pattern_cache_hits_; }

 private:
  // The tokens a pattern string's DFA walk finds from one state: those that
  // stay inside the string (a bitmask) and the trie nodes where the string
  // closes in an accepting state (the matcher finishes those subtrees), with
  // each one's path bytes, closing quote included, one after another.
  struct PatternWalk {
    TokenBitmask inside;
    std::vector<uint32_t> close_nodes;
    std::vector<uint8_t> close_bytes;
  };
  // Key of a cached walk: the DFA (its uid), its state and the string
  // lexer's state. The character count is not in it: a walk is cached only
  // when no budget can bind within one token.
  struct PatternKey {
    uint64_t dfa_uid;
    uint32_t state;
    uint8_t lex, lex_aux, flags;
    bool canonical;  // an object key
    bool operator==(const PatternKey&) const = default;
  };
  struct PatternKeyHash {
    size_t operator()(const PatternKey& k) const {
      return std::hash<uint64_t>()(k.dfa_uid * 0x9E3779B97F4A7C15ull ^ k.state) ^
             (size_t{k.lex} << 8 | size_t{k.lex_aux} << 16 | size_t{k.flags} << 24 |
              size_t{k.canonical} << 32);
    }
  };
  // At most this many walks are kept (each a vocabulary bitmask, 6 KiB at
  // 49k tokens, 32 KiB at 262k); past it the cache starts over.
  static constexpr size_t kMaxPatternCacheEntries = 2048;

  const TokenTrie* trie_;
  std::vector<GrammarMatcher> states_;  // states_[d]: after the first d bytes of the path
  // The pattern-string walk: the frame after the first d bytes, and the
  // path's bytes.
  std::vector<MatchFrame> frames_;
  std::vector<uint8_t> path_;
  std::unordered_map<PatternKey, PatternWalk, PatternKeyHash> pattern_cache_;
  PatternWalk scratch_walk_;
  // Several threads in pattern strings: their distinct tops, and the close
  // nodes of all their walks (close_seen_ marks them while merging).
  std::vector<GrammarMatcher::PatternTop> pattern_tops_;
  PatternWalk merged_closes_;
  std::vector<uint8_t> close_seen_;

  // The walk inside a string with a pattern, from the frame `top`
  // (canonical: an object key, lexed as the matcher lexes keys).
  void WalkPattern(const ByteDfa& dfa, const MatchFrame& top, bool canonical, PatternWalk* walk);
  // WalkPattern's result for `top`, from the cache where it can be.
  const PatternWalk& PatternTokens(const GrammarMatcher::PatternTop& top);
  // Finishes each token that closes the string in `walk` (its close nodes)
  // with the whole matcher `m`.
  void FinishCloses(const GrammarMatcher& m, const PatternWalk& walk, TokenBitmask* out);
  // The matcher walk over trie nodes [begin, end) (a run of whole subtrees
  // at one depth); states_[depth - 1] holds the state before them.
  // skip_plain: subtrees of plain tokens are left to the plain mask.
  void WalkNodes(uint32_t begin, uint32_t end, bool skip_plain, TokenBitmask* out);
  size_t visited_ = 0;
  size_t pattern_cache_hits_ = 0;
};

// Expands a bitmask to one byte per token (the sampler's mask form) for a
// logits row of `vocab` entries (ids past the bitmask get 0).
void ExpandMask(const TokenBitmask& bits, size_t vocab, std::vector<uint8_t>* out);

}  // namespace brisk
