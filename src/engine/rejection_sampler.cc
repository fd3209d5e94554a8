#include "engine/rejection_sampler.h"

#include <algorithm>
#include <cassert>

namespace brisk {
namespace {

// Index of the largest probability (lowest id on ties); -1 if all are 0.
int32_t ArgMaxProb(std::span<const float> p) {
  int32_t best = -1;
  float best_p = 0.0f;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > best_p) {
      best_p = p[i];
      best = static_cast<int32_t>(i);
    }
  return best;
}

// A draw from `w` (unnormalized, >= 0); -1 if it is all zeros.
int32_t Draw(std::span<const float> w, Sampler& sampler) {
  if (std::none_of(w.begin(), w.end(), [](float x) { return x > 0.0f; })) return -1;
  return static_cast<int32_t>(sampler.DrawWeighted(w));
}

}  // namespace

Verdict VerifyDraft(std::span<const int32_t> draft, std::span<const float> target,
                    std::span<const float> draft_probs, size_t vocab, bool greedy, Sampler& sampler,
                    std::vector<float>* scratch) {
  const size_t k = draft.size();
  assert(target.size() == (k + 1) * vocab);
  assert(draft_probs.empty() || draft_probs.size() == k * vocab);
  Verdict v;
  for (size_t i = 0; i < k; ++i) {
    const std::span<const float> p = target.subspan(i * vocab, vocab);
    const int32_t d = draft[i];
    const bool in_vocab = d >= 0 && static_cast<size_t>(d) < vocab;
    if (greedy) {
      const int32_t best = ArgMaxProb(p);
      if (!in_vocab || d != best) {
        v.next = best;
        return v;
      }
      ++v.accepted;
      continue;
    }
    const float pd = in_vocab ? p[d] : 0.0f;
    if (draft_probs.empty()) {
      // q one-hot at d: accept with probability p(d); the residual is p - 1[d]
      // clipped at 0, i.e. p without d.
      if (pd > 0.0f && sampler.NextUniform() < pd) {
        ++v.accepted;
        continue;
      }
      scratch->assign(p.begin(), p.end());
      if (in_vocab) (*scratch)[d] = 0.0f;
      v.next = Draw(*scratch, sampler);
      if (v.next < 0)
        v.next = ArgMaxProb(p);  // p was one-hot at d: cannot happen after a rejection
      return v;
    }
    const std::span<const float> q = draft_probs.subspan(i * vocab, vocab);
    const float qd = in_vocab ? q[d] : 0.0f;
    // Accept with min(1, p/q): u * q < p, with u in [0, 1). A token the
    // drafter could not have drawn (q = 0) is never accepted.
    if (qd > 0.0f && sampler.NextUniform() * qd < pd) {
      ++v.accepted;
      continue;
    }
    scratch->resize(vocab);
    for (size_t t = 0; t < vocab; ++t) (*scratch)[t] = std::max(0.0f, p[t] - q[t]);
    v.next = Draw(*scratch, sampler);
    // p <= q everywhere means p == q (both sum to 1), where a rejection has
    // probability 0; rounding can still get here: fall back to p itself.
    if (v.next < 0) v.next = Draw(p, sampler);
    return v;
  }
  const std::span<const float> bonus = target.subspan(k * vocab, vocab);
  v.next = greedy ? ArgMaxProb(bonus) : Draw(bonus, sampler);
  return v;
}

}  // namespace brisk
