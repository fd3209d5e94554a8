// Speculative verification: which of a drafter's proposed tokens the target
// model accepts, and the token that follows them.
//
// The target forward pass scores the sequence's last token plus k draft
// tokens in one step, giving k + 1 rows of logits; each row goes through the
// sequence's own Sampler (mask, bias, penalties, temperature, top-k/p, min-p:
// Sampler::Distribution) into the distribution p_i a plain step would sample
// from at that position. Then, for i = 0..k-1:
//   greedy:  accept d_i while it is the argmax of p_i (what plain greedy
//            decoding would have produced), else emit the argmax and stop;
//   sampled: accept d_i with probability min(1, p_i(d_i) / q_i(d_i)), else
//            draw from the residual max(0, p_i - q_i) renormalized and stop
//            (Leviathan et al. 2023; Chen et al. 2023). q_i is the drafter's
//            distribution; a deterministic drafter (n-gram lookup) has q_i
//            one-hot at d_i, so d_i is accepted with probability p_i(d_i)
//            and the residual is p_i without d_i.
// When all k are accepted, a bonus token is drawn from p_k. Either way each
// emitted token is distributed exactly as under plain sampling from the
// target: speculation changes speed, never the output distribution.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampler.h"

namespace brisk {

struct Verdict {
  int accepted = 0;   // draft tokens kept: draft[0, accepted)
  int32_t next = -1;  // the token after them (a correction or the bonus); -1: the mask allows none
};

// `target` holds draft.size() + 1 rows of probabilities (Sampler::Distribution),
// each `vocab` long. `draft_probs` is empty for a deterministic drafter, else
// draft.size() rows of the drafter's distributions (same vocab). Randomness
// comes from `sampler` (its NextUniform / DrawWeighted), so a seeded request
// gives the same tokens on every run. `scratch` is reused between calls.
Verdict VerifyDraft(std::span<const int32_t> draft, std::span<const float> target,
                    std::span<const float> draft_probs, size_t vocab, bool greedy, Sampler& sampler,
                    std::vector<float>* scratch);

}  // namespace brisk
