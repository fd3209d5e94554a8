// Allowed-token masks for a CfgMatcher (cfg_matcher.h) over a vocabulary's
// TokenTrie (token_mask.h).
//
// The walk is TokenMasker's: depth-first over the trie in preorder, a byte
// the matcher rejects prunes its whole subtree. Instead of one matcher copy
// per depth it uses the Earley chart's rollback: at a node of depth d the
// matcher is rolled back to d - 1 bytes past the start, then advanced by the
// node's byte. End-of-generation tokens are allowed exactly when the matcher
// CanEnd().
#pragma once

#include "grammar/cfg_matcher.h"
#include "grammar/token_mask.h"
#include "grammar/token_vocab.h"

namespace brisk {

class CfgTokenMasker {
 public:
  explicit CfgTokenMasker(const TokenTrie* trie) : trie_(trie) {}

  // Bit t set iff token t may come next. `m` is used as scratch and left as
  // it was on return. `out` is resized to the vocabulary's word count.
  void Compute(CfgMatcher& m, TokenBitmask* out);

  // The same by brute force: every token's bytes through a copy of `m`.
  // For tests.
  static void ComputeReference(const TokenVocab& vocab, const CfgMatcher& m, TokenBitmask* out);

  // Trie nodes visited by the last Compute() (for benchmarks).
  size_t last_visited() const { return visited_; }

 private:
  const TokenTrie* trie_;
  size_t visited_ = 0;
};

}  // namespace brisk
