// The state of a structured-output constraint while a sequence generates,
// as the output processor sees it: one interface over the JSON-schema
// matcher (matcher.h) and the Earley matcher of regex / choice / GBNF
// constraints (cfg_matcher.h). MakeTokenConstraint() picks the one a
// CompiledConstraint needs; nothing past it branches on the kind.
//
// One virtual call per token step (advance, mask, end check); the byte-level
// work and the mask walk stay inside each matcher and its masker.
#pragma once

#include <memory>
#include <string_view>

#include "grammar/cfg_mask.h"
#include "grammar/token_mask.h"

namespace brisk {

struct CompiledConstraint;  // grammar/constraint.h

// The token-mask walkers of one vocabulary's trie, shared by every
// constraint whose masks one thread computes (their caches and scratch
// serve them all). Each is made on its first use.
class TokenMaskers {
 public:
  // `trie` must outlive the maskers.
  explicit TokenMaskers(const TokenTrie* trie) : trie_(trie) {}

  TokenMasker& json();
  CfgTokenMasker& cfg();

 private:
  const TokenTrie* trie_;
  std::unique_ptr<TokenMasker> json_;
  std::unique_ptr<CfgTokenMasker> cfg_;
};

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  // Consumes a token's bytes, all or none: false (and no change) when no
  // accepted text continues with them.
  virtual bool AdvanceBytes(std::string_view bytes) = 0;
  // The bytes so far are a complete accepted text (an end token may come).
  virtual bool CanEnd() const = 0;
  // Bit t of *out set iff token t may come next (token_mask.h's rule; `out`
  // is resized to the vocabulary's word count). May use the state as
  // scratch; leaves it as it was.
  virtual void FillMask(TokenMaskers& maskers, TokenBitmask* out) = 0;

  // Speculative decoding: Save() marks the state; Restore() returns to the
  // last mark, undoing the draft tokens advanced since. One mark at a time.
  virtual void Save() = 0;
  virtual void Restore() = 0;

  // An independent copy of the state (a forked sample's own).
  virtual std::unique_ptr<TokenConstraint> Clone() const = 0;
};

// The initial state of `constraint`'s grammar (kept alive by the result).
std::unique_ptr<TokenConstraint> MakeTokenConstraint(
    std::shared_ptr<const CompiledConstraint> constraint);

}  // namespace brisk
