// When to speculate, and how far: decided per sequence each step from what
// was measured, so speculation turns itself off where it does not pay
// (a large batch, a drafter that keeps missing) without a throughput cliff.
//
// Model: a draft token at position i is accepted with probability alpha given
// that the ones before it were (AcceptanceTracker estimates alpha online per
// sequence), so k draft tokens yield E(k) = 1 + alpha + ... + alpha^k tokens
// in one step instead of 1. A step over N batch tokens takes T(N) seconds
// (StepCostModel measures it). Adding k draft tokens of one sequence to a
// step of B sequences and N tokens, expected to yield X tokens (B, plus what
// the drafts given to the others so far are expected to add), turns
// X / T(N) tokens per second into (X - 1 + E(k)) / T(N + k):
// ChooseDraftLength takes the k that maximizes it and 0 unless that beats
// not drafting by `min_gain`. At batch 1 on a
// memory-bound CPU T(N + k) is close to T(N), so drafts are nearly free; at
// batch 32 a step is compute-bound and the same k costs the whole batch.
// A draft model adds `draft_s_per_token` seconds per draft token to the step
// (its own forward rounds): (X - 1 + E(k)) / (T(N + k) + k * d).
#pragma once

#include <array>
#include <cstddef>

namespace brisk {

class AcceptanceTracker {
 public:
  // prior: the acceptance rate assumed before any evidence, held with the
  // weight of `prior_weight` draft tokens; decay: per-update EWMA factor.
  explicit AcceptanceTracker(double prior = 0.5, double prior_weight = 4, double decay = 0.9);
  // One verify step: `proposed` draft tokens, the first `accepted` kept.
  void Update(int proposed, int accepted);
  double alpha() const;

 private:
  double accepted_;  // decayed count of accepted draft tokens
  double tried_;     // decayed count of draft tokens that faced a verdict
  double decay_;
};

class StepCostModel {
 public:
  // `prefill_weight`: what a prefill position costs relative to a decode or
  // verify position, which also computes a logits row (PrefillTokenWeight:
  // the share of a token's work outside the output layer).
  explicit StepCostModel(double prefill_weight = 1.0);
  // A step took `seconds` over `decode` positions that computed a logits row
  // (decode and verify positions) and `prefill` positions that did not.
  void Observe(size_t decode, size_t prefill, double seconds);
  // A step over `tokens` positions, each with a logits row, took `seconds`.
  void Observe(size_t tokens, double seconds) { Observe(tokens, 0, seconds); }
  // Steps are kept by size: exactly 1, 2, ..., 127 tokens (a kernel that
  // works in tiles of columns makes the 9th position of a step dearer than
  // the 8th), then [128, 256), [256, 512), ... up to 32768 and more.
  static constexpr size_t kBuckets = 127 + 9;
  // Estimated seconds of a step over `tokens` decode or verify positions.
  // Where steps without prefill were measured, they alone give the cost:
  // a prefill-heavy step of the same size computes fewer logits rows, and
  // with a large vocabulary it would make verify positions look half their
  // price. Elsewhere steps with prefill count too, their prefill positions
  // at `prefill_weight`. Measured buckets are interpolated
  // linearly; beyond the measured range the nearest measured bucket is
  // scaled linearly in tokens (pessimistic for drafts); with no
  // measurement at all, linear in tokens.
  double Seconds(size_t tokens) const;
  // Estimated seconds of a step over `tokens` prefill positions.
  double PrefillSeconds(size_t tokens) const;
  // A step of `tokens` tokens or fewer was measured (Seconds(tokens) is then
  // not extrapolated down from bigger steps).
  bool Knows(size_t tokens) const;
  // Steps of about `tokens` tokens were measured: one in its bucket, or
  // one below and one above it (Seconds(tokens) interpolates).
  bool Brackets(size_t tokens) const;
  // The lower edge of the largest bucket measured (0: nothing measured).
  size_t Largest() const;

 private:
  struct Buckets {
    std::array<double, kBuckets> seconds_per_token{};  // EWMA of seconds / tokens
    std::array<bool, kBuckets> seen{};
    void Observe(size_t tokens, double seconds);
  };
  // Seconds of a step over `tokens` positions (units); `decode`: decode
  // or verify positions, from the steps without prefill where measured.
  double Estimate(size_t tokens, bool decode) const;
  // A step's positions in decode-position units (at least 1).
  size_t Units(size_t decode, size_t prefill) const;

  double prefill_weight_;
  Buckets decode_;  // steps without prefill positions
  Buckets all_;     // every step, prefill positions at prefill_weight_
};

// Expected tokens from one verify step with k drafts at acceptance alpha.
double ExpectedTokens(double alpha, int k);

// The draft length in [0, max_k] for one sequence of a step that has
// `batch_sequences` sequences and `batch_tokens` tokens without its drafts.
// `others_extra`: the tokens the drafts already in the step (those of the
// other sequences, in `batch_tokens`) are expected to add. Without it a step
// whose cost others' drafts have raised would look as if it yielded one
// token a sequence, and every further draft would look cheap against it.
int ChooseDraftLength(double alpha, int max_k, size_t batch_sequences, size_t batch_tokens,
                      const StepCostModel& cost, double min_gain = 1.05,
                      double draft_s_per_token = 0, double others_extra = 0);

// Seconds one sequence of a step of `batch_sequences` saves per token it
// generates by drafting k tokens: a plain step's T(B) against a drafting
// step's (T(B + k) + k * draft_s_per_token) spread over its E(k) tokens.
// Negative where drafting costs time.
double SavedSecondsPerToken(double alpha, int k, size_t batch_sequences, const StepCostModel& cost,
                            double draft_s_per_token = 0);

}  // namespace brisk
