// Drafters for speculative decoding: cheap guesses of the next tokens of a
// sequence, which the target model then verifies in one step
// (rejection_sampler.h). A drafter is per sequence and sees the sequence's
// tokens (prompt + output) as they grow.
//
// NgramDrafter is prompt lookup decoding: find an earlier place where the
// sequence's last n tokens occurred (n from max_n down to min_n, in the
// prompt or the output) and propose the tokens that followed there. Of the
// places (the latest kMaxCandidates), the one whose tokens before the match
// also agree longest with the sequence's wins, the latest among equals: in
// text that repeats a pattern (JSON records, lines of code) the short match
// alone points at the last repetition, the longer context at the record or
// line being copied. It needs
// no model, so its proposals are deterministic (no draft distribution): it
// pays off where the output copies from the input (editing code, extraction,
// rewriting JSON, summaries that quote).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace brisk {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // The sequence grew by `tokens` (the prompt first, then each output token).
  virtual void Append(std::span<const int32_t> tokens) = 0;
  // Up to `max_tokens` proposed next tokens into `out` (cleared first; empty:
  // no guess). When the drafter samples from a distribution, `probs` (if not
  // null) gets one vocab-sized row per proposed token; a deterministic drafter
  // leaves it empty.
  virtual void Propose(int max_tokens, std::vector<int32_t>* out, std::vector<float>* probs) = 0;
  // Forget the last `n` tokens (the sequence rolled back).
  virtual void Truncate(size_t n) = 0;
};

class NgramDrafter final : public Drafter {
 public:
  // Match lengths [min_n, max_n], 1 <= min_n <= max_n <= 8.
  NgramDrafter(int min_n, int max_n);

  void Append(std::span<const int32_t> tokens) override;
  void Propose(int max_tokens, std::vector<int32_t>* out, std::vector<float>* probs) override;
  void Truncate(size_t n) override;

  size_t size() const { return tokens_.size(); }

 private:
  static constexpr int kMaxCandidates = 32;  // places compared per proposal
  static constexpr int kMaxContext = 64;     // tokens compared before a match

  // Hash of tokens_[end - n, end).
  uint64_t Hash(size_t end, int n) const;
  // How many tokens before tokens_[end - n, end) equal those before the
  // sequence's last n, up to kMaxContext.
  int ContextMatch(size_t end, int n) const;
  // Indexes the n-grams ending at tokens_.size() - 1 that now have a
  // following token (they end one before the newest token).
  void IndexNewest();

  const int min_n_, max_n_;
  std::vector<int32_t> tokens_;
  // Per n: hash of an n-gram -> the latest end position (exclusive) among its
  // occurrences that have a next token. A hit is compared token by token
  // before use (hash collisions).
  std::vector<std::unordered_map<uint64_t, uint32_t>> index_;
  // Per n, per end position: the previous end position indexed under the
  // same hash (kNone: none), so the occurrences form a chain, latest first.
  static constexpr uint32_t kNone = UINT32_MAX;
  std::vector<std::vector<uint32_t>> prev_;
};

}  // namespace brisk
