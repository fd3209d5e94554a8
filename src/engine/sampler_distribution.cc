// Sampler::Distribution: the probabilities behind Sample(), for speculative
// verification. It follows Sample()'s pipeline step for step (mask -> bias
// -> penalties -> temperature -> top-k -> top-p -> min-p) but keeps every
// survivor's weight instead of drawing one.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "engine/fast_exp.h"
#include "engine/sampler.h"

namespace brisk {

void Sampler::Distribution(std::span<float> logits, std::span<const int32_t> history,
                           std::vector<float>* probs) {
  ApplyMaskAndPenalties(logits, history);
  const size_t vocab = logits.size();
  probs->assign(vocab, 0.0f);
  const int32_t best = ArgMax(logits);
  if (best < 0) return;
  if (params_.greedy()) {
    (*probs)[best] = 1.0f;
    return;
  }
  const float max_logit = logits[best];
  const float inv_t = 1.0f / params_.temperature;
  const float min_w = params_.min_p;
  const bool top_k = params_.top_k > 0 && static_cast<size_t>(params_.top_k) < vocab;

  // Unnormalized weights exp((l - max) / T) of every token that survives,
  // with the same exp as Sample() (fast_exp.h).
  double z = 0.0;  // the mass top-p is measured against: before min-p, after top-k
  cand_.clear();
  if (top_k) {
    SelectTopK(logits);
    size_t kept = 0;
    for (Candidate c : cand_) {
      c.w = ExpNonPositive((c.w - max_logit) * inv_t);
      z += c.w;
      if (c.w > 0.0f && c.w >= min_w) cand_[kept++] = c;
    }
    cand_.resize(kept);
  } else {
    weights_.resize(vocab);
    for (size_t i = 0; i < vocab; ++i)
      weights_[i] = ExpNonPositive((logits[i] - max_logit) * inv_t);
    // Summed in Sample()'s order (4 accumulators), so the nucleus edge is the same.
    double s[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= vocab; i += 4)
      for (int j = 0; j < 4; ++j) s[j] += weights_[i + j];
    for (; i < vocab; ++i) s[0] += weights_[i];
    z = (s[0] + s[1]) + (s[2] + s[3]);
    for (size_t t = 0; t < vocab; ++t) {
      const float w = weights_[t];
      if (w > 0.0f && w >= min_w) cand_.push_back({static_cast<int32_t>(t), w});
    }
  }
  if (params_.top_p < 1.0f) TruncateToNucleus(z);
  assert(!cand_.empty());
  double total = 0.0;
  for (const Candidate& c : cand_) total += c.w;
  for (const Candidate& c : cand_) (*probs)[c.id] = static_cast<float>(c.w / total);
}

}  // namespace brisk
