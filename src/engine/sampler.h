// Token sampling for one sequence: penalties, temperature, top-k, top-p
// (nucleus), min-p, then a draw from the sequence's own RNG.
//
// Order of operations (as in vLLM / OpenAI semantics):
//   mask -> logit_bias -> penalties -> [greedy: argmax] -> temperature
//     -> top-k -> top-p -> min-p -> draw
// Each sequence owns one Sampler; the same seed and the same logits give the
// same tokens on every platform (the RNG and the uniform draw are fully
// specified, no std::*_distribution).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "util/status.h"

namespace brisk {

struct SamplingParams {
  // Divides the logits. 0 = greedy (argmax). Range [0, 2].
  float temperature = 1.0f;
  // Keep only the k most likely tokens. 0 = off. Range >= 0; 1 = greedy.
  int top_k = 0;
  // Keep the smallest set of most likely tokens whose probability sums to
  // >= top_p. 1 = off. Range (0, 1].
  float top_p = 1.0f;
  // Drop tokens with probability < min_p * (probability of the most likely
  // token). 0 = off. Range [0, 1].
  float min_p = 0.0f;
  // CTRL-style: for each token in the penalty window, logit > 0 ? logit / r
  // : logit * r. 1 = off. Range (0, 10].
  float repetition_penalty = 1.0f;
  // OpenAI-style: logit -= count * frequency_penalty. Range [-2, 2].
  float frequency_penalty = 0.0f;
  // OpenAI-style: logit -= presence_penalty if count > 0. Range [-2, 2].
  float presence_penalty = 0.0f;
  // All three penalties look at the last `penalty_window` tokens of the
  // history passed to Sample(). 0 = the whole history. The default follows
  // llama.cpp's penalty_last_n = 64: long enough to stop loops, short enough
  // that penalties stay O(64) per token. Range >= 0.
  int penalty_window = 64;
  // Per-request seed; unset = the engine's default seed for this sequence.
  std::optional<uint64_t> seed;
  // OpenAI's logit_bias: (token id, bias) pairs added to the logits after
  // the mask and before the penalties; -100 effectively bans a token, +100
  // effectively forces it. Ids >= 0, biases finite in [-100, 100]; an id the
  // vocabulary does not have is ignored here (the engine and the server
  // reject it before it gets here). At most one entry per id.
  std::vector<std::pair<int32_t, float>> logit_bias;

  bool greedy() const { return temperature == 0.0f || top_k == 1; }
  bool has_penalties() const {
    return repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f;
  }
  // InvalidArgument naming the first field out of range (NaN is out of range).
  Status Validate() const;
};

class Sampler {
 public:
  // `params` must have passed Validate(). The RNG is seeded with
  // params.seed if set, else `default_seed`.
  Sampler(const SamplingParams& params, uint64_t default_seed);

  // Picks the next token. `logits` is vocab-sized; on return it holds the
  // masked and penalized logits (before temperature), which is what
  // TopLogprobs() should see. `history` is prompt + output so far, the input
  // for the penalties (ids outside [0, vocab) are ignored).
  // Returns -1 only if the mask allows no token.
  int32_t Sample(std::span<float> logits, std::span<const int32_t> history);

  // Allowed-token mask for grammar-constrained decoding: allowed[i] != 0
  // keeps token i. A view, not a copy: the span must stay valid until
  // ClearMask() or the next SetMask(). Applies to every Sample() until then.
  void SetMask(std::span<const uint8_t> allowed) { mask_ = allowed; }
  void ClearMask() { mask_ = {}; }

  const SamplingParams& params() const { return params_; }
  uint64_t seed() const { return seed_; }

  // Steps of the pipeline, public for tests and for callers that need the
  // penalized logits without drawing (speculative verification, logprobs).
  // Applies the mask and the penalties to `logits` in place.
  void ApplyMaskAndPenalties(std::span<float> logits, std::span<const int32_t> history);

  // The distribution Sample() draws from, as a dense vocab-sized vector of
  // probabilities summing to 1 (0 outside top-k / top-p / min-p and the
  // mask; one-hot at the argmax when greedy): mask, bias and penalties are
  // applied to `logits` in place, as in Sample(). All zeros only if the
  // mask allows no token. For speculative verification, which must accept
  // and resample under exactly the distribution a plain step samples from.
  void Distribution(std::span<float> logits, std::span<const int32_t> history,
                    std::vector<float>* probs);

  // One uniform double in [0, 1) from this sequence's RNG (the same stream
  // Sample() draws from), and a draw of an index of `w` (weights >= 0, not
  // all 0) with probability w_i / sum: the rejection sampler's randomness,
  // so a seeded request stays deterministic with speculation on.
  double NextUniform() { return Uniform01(); }
  size_t DrawWeighted(std::span<const float> w) { return DrawIndex(w); }

 private:
  struct Candidate {
    int32_t id;
    float w;  // logit, then exp((logit - max) / temperature)
  };
  // Keeps in cand_ only the nucleus: the smallest set of the most likely
  // candidates whose weight reaches top_p * z. Weighted quickselect, O(n)
  // expected; the survivors are left unsorted (the draw does not need order).
  void TruncateToNucleus(double z);
  // The weights exp((l - max) / T) of the tokens that survive top-k, top-p
  // and min-p (`best`: the argmax of `logits`), shared by Sample() and
  // Distribution() so both see one distribution: dense in weights_ (true,
  // the plain-temperature path) or as the candidates in cand_ (false).
  bool Weigh(std::span<const float> logits, int32_t best);
  // Replaces cand_ with the top_k largest logits (a heap scan, O(V) compares).
  void SelectTopK(std::span<const float> logits);
  // Draws an index of `w` (weights >= 0, not all 0) with probability w_i / sum.
  size_t DrawIndex(std::span<const float> w);
  // A uniform double in [0, 1) from the top 53 bits of one RNG output.
  double Uniform01();

  SamplingParams params_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  std::span<const uint8_t> mask_;
  // Scratch reused across calls: no allocation per token after the first.
  std::vector<Candidate> cand_;
  std::vector<float> weights_;      // vocab-sized, exp((l - max) / T)
  std::vector<double> block_sums_;  // DrawIndex's per-block partial sums
  std::vector<int32_t> window_;
};

// Index of the largest logit (lowest id on ties); -1 if all are -inf.
// NaN logits (a model bug) give an unspecified index, never a crash.
int32_t ArgMax(std::span<const float> logits);

// The k most likely tokens under log-softmax(logits), most likely first:
// (token id, log probability). k is clamped to the vocab size.
std::vector<std::pair<int32_t, float>> TopLogprobs(std::span<const float> logits, int k);

}  // namespace brisk
