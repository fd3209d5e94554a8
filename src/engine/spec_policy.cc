#include "engine/spec_policy.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace brisk {

AcceptanceTracker::AcceptanceTracker(double prior, double prior_weight, double decay)
    : accepted_(prior * prior_weight), tried_(prior_weight), decay_(decay) {}

void AcceptanceTracker::Update(int proposed, int accepted) {
  if (proposed <= 0) return;
  accepted = std::clamp(accepted, 0, proposed);
  // Positions 0..accepted-1 passed; position `accepted` (if any) failed; the
  // ones after it never faced a verdict.
  const int faced = accepted + (accepted < proposed ? 1 : 0);
  accepted_ = accepted_ * decay_ + accepted;
  tried_ = tried_ * decay_ + faced;
}

double AcceptanceTracker::alpha() const { return tried_ > 0 ? accepted_ / tried_ : 0.0; }

namespace {

// Buckets 0..kExact-1 hold steps of exactly 1..kExact tokens; then
// [128, 256), [256, 512), ... (the last one open-ended).
constexpr size_t kExact = 127;

size_t BucketOf(size_t tokens) {
  tokens = std::max<size_t>(tokens, 1);
  if (tokens <= kExact) return tokens - 1;
  const size_t log2 = std::bit_width(tokens) - 1;  // >= 7
  return std::min<size_t>(kExact + log2 - 7, StepCostModel::kBuckets - 1);
}

// A bucket's smallest step.
size_t EdgeOf(size_t b) { return b < kExact ? b + 1 : size_t{128} << (b - kExact); }

}  // namespace

StepCostModel::StepCostModel(double prefill_weight)
    : prefill_weight_(std::clamp(prefill_weight, 0.05, 1.0)) {}

void StepCostModel::Buckets::Observe(size_t tokens, double seconds) {
  const size_t b = BucketOf(tokens);
  const double per = seconds / static_cast<double>(tokens);
  seconds_per_token[b] = seen[b] ? 0.8 * seconds_per_token[b] + 0.2 * per : per;
  seen[b] = true;
}

size_t StepCostModel::Units(size_t decode, size_t prefill) const {
  const double units = static_cast<double>(decode) + prefill_weight_ * static_cast<double>(prefill);
  return std::max<size_t>(static_cast<size_t>(std::lround(units)), 1);
}

void StepCostModel::Observe(size_t decode, size_t prefill, double seconds) {
  if (decode + prefill == 0 || !(seconds > 0)) return;
  if (prefill == 0) decode_.Observe(decode, seconds);
  all_.Observe(Units(decode, prefill), seconds);
}

double StepCostModel::Estimate(size_t tokens, bool decode) const {
  // Bucket b's seconds per token: for decode and verify positions, from the
  // steps without prefill where there were some.
  auto seen = [&](size_t b) { return all_.seen[b] || (decode && decode_.seen[b]); };
  auto per = [&](size_t b) {
    return decode && decode_.seen[b] ? decode_.seconds_per_token[b] : all_.seconds_per_token[b];
  };
  tokens = std::max<size_t>(tokens, 1);
  const double n = static_cast<double>(tokens);
  // Step time at a bucket's smallest step, from its per-token average.
  auto at = [&](size_t b) { return per(b) * static_cast<double>(EdgeOf(b)); };
  const size_t b = BucketOf(tokens);
  size_t lo = b + 1, hi = kBuckets;
  for (size_t i = b + 1; i-- > 0;)
    if (seen(i)) {
      lo = i;
      break;
    }
  for (size_t i = b + 1; i < kBuckets; ++i)
    if (seen(i)) {
      hi = i;
      break;
    }
  const bool has_lo = lo <= b, has_hi = hi < kBuckets;
  if (has_lo && has_hi) {
    const double x0 = static_cast<double>(EdgeOf(lo)), x1 = static_cast<double>(EdgeOf(hi));
    const double y0 = at(lo), y1 = at(hi);
    return y0 + (y1 - y0) * (n - x0) / (x1 - x0);
  }
  if (has_lo) return per(lo) * n;  // beyond what was measured: linear
  if (has_hi) return at(hi);       // below: at least as cheap as the smallest seen
  return n;                        // nothing measured: linear in tokens
}

double StepCostModel::Seconds(size_t tokens) const { return Estimate(tokens, true); }

double StepCostModel::PrefillSeconds(size_t tokens) const {
  // Every step counts, in units: a decode step's cost per position says
  // little about a prefill's, which reads the weights once for many.
  return Estimate(Units(0, tokens), false);
}

bool StepCostModel::Knows(size_t tokens) const {
  for (size_t b = 0; b <= BucketOf(tokens); ++b)
    if (all_.seen[b]) return true;
  return false;
}

bool StepCostModel::Brackets(size_t tokens) const {
  const size_t b = BucketOf(tokens);
  if (all_.seen[b]) return true;
  bool below = false, above = false;
  for (size_t i = 0; i < kBuckets; ++i) (i < b ? below : above) |= all_.seen[i];
  return below && above;
}

size_t StepCostModel::Largest() const {
  for (size_t b = kBuckets; b-- > 0;)
    if (all_.seen[b]) return EdgeOf(b);
  return 0;
}

double ExpectedTokens(double alpha, int k) {
  alpha = std::clamp(alpha, 0.0, 1.0);
  double e = 0, a = 1;
  for (int i = 0; i <= k; ++i, a *= alpha) e += a;
  return e;
}

int ChooseDraftLength(double alpha, int max_k, size_t batch_sequences, size_t batch_tokens,
                      const StepCostModel& cost, double min_gain, double draft_s_per_token,
                      double others_extra) {
  if (max_k <= 0 || batch_sequences == 0) return 0;
  const double b = static_cast<double>(batch_sequences) + std::max(others_extra, 0.0);
  const double plain = b / cost.Seconds(batch_tokens);
  int best_k = 0;
  double best = plain * min_gain;
  for (int k = 1; k <= max_k; ++k) {
    const double rate =
        (b - 1 + ExpectedTokens(alpha, k)) /
        (cost.Seconds(batch_tokens + static_cast<size_t>(k)) + k * draft_s_per_token);
    if (rate > best) {
      best = rate;
      best_k = k;
    }
  }
  return best_k;
}

double SavedSecondsPerToken(double alpha, int k, size_t batch_sequences, const StepCostModel& cost,
                            double draft_s_per_token) {
  const size_t b = std::max<size_t>(batch_sequences, 1);
  if (k <= 0) return 0;
  return cost.Seconds(b) - (cost.Seconds(b + static_cast<size_t>(k)) + k * draft_s_per_token) /
                               ExpectedTokens(alpha, k);
}

}  // namespace brisk
