// When to speculate, and how far: decided per sequence each step from what
// was measured, so speculation turns itself off where it does not pay
// (a large batch, a drafter that keeps missing) without a throughput cliff.
//
// Model: a draft token at position i is accepted with probability alpha given
// that the ones before it were (AcceptanceTracker estimates alpha online per
// sequence), so k draft tokens yield E(k) = 1 + alpha + ... + alpha^k tokens
// in one step instead of 1. A step over N batch tokens takes T(N) seconds
// (StepCostModel measures it). Adding k draft tokens of one sequence to a
// step of B sequences and N tokens turns B / T(N) tokens per second into
// (B - 1 + E(k)) / T(N + k): ChooseDraftLength takes the k that maximizes it
// and 0 unless that beats plain decoding by `min_gain`. At batch 1 on a
// memory-bound CPU T(N + k) is close to T(N), so drafts are nearly free; at
// batch 32 a step is compute-bound and the same k costs the whole batch.
// A draft model adds `draft_s_per_token` seconds per draft token to the step
// (its own forward rounds): (B - 1 + E(k)) / (T(N + k) + k * d).
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
  // A step over `tokens` batch tokens took `seconds`.
  void Observe(size_t tokens, double seconds);
  // Estimated seconds of a step over `tokens` tokens: measured buckets
  // (powers of two) interpolated linearly; beyond the measured range the
  // nearest measured bucket scaled linearly in tokens (pessimistic for
  // drafts); with no measurement at all, linear in tokens.
  double Seconds(size_t tokens) const;
  // A step of `tokens` tokens or fewer was measured (Seconds(tokens) is then
  // not extrapolated down from bigger steps).
  bool Knows(size_t tokens) const;
  // Steps of about `tokens` tokens were measured: one in its bucket, or
  // one below and one above it (Seconds(tokens) interpolates).
  bool Brackets(size_t tokens) const;

 private:
  static constexpr size_t kBuckets = 16;              // 1, 2, 4, ..., 32768 tokens
  std::array<double, kBuckets> seconds_per_token_{};  // EWMA of seconds / tokens
  std::array<bool, kBuckets> seen_{};
};

// Expected tokens from one verify step with k drafts at acceptance alpha.
double ExpectedTokens(double alpha, int k);

// The draft length in [0, max_k] for one sequence of a step that has
// `batch_sequences` sequences and `batch_tokens` tokens without drafts.
int ChooseDraftLength(double alpha, int max_k, size_t batch_sequences, size_t batch_tokens,
                      const StepCostModel& cost, double min_gain = 1.05,
                      double draft_s_per_token = 0);

// Seconds one sequence of a step of `batch_sequences` saves per token it
// generates by drafting k tokens: a plain step's T(B) against a drafting
// step's (T(B + k) + k * draft_s_per_token) spread over its E(k) tokens.
// Negative where drafting costs time.
double SavedSecondsPerToken(double alpha, int k, size_t batch_sequences, const StepCostModel& cost,
                            double draft_s_per_token = 0);

}  // namespace brisk
