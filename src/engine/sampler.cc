#include "engine/sampler.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>

#include "engine/fast_exp.h"

namespace brisk {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// lo <= x && x <= hi is false for NaN, so NaN fails every range check.
bool InClosed(float x, float lo, float hi) { return lo <= x && x <= hi; }

// Descending by weight, ascending id on ties: a total order, so partial
// sorts and nth_element give the same candidate set on every run.
struct ByWeightDesc {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a.w > b.w || (a.w == b.w && a.id < b.id);
  }
};

// out[i] = exp((logits[i] - max) * inv_t), each in [0, 1], the max exactly 1.
void ExpScaled(std::span<const float> logits, float max_logit, float inv_t, std::span<float> out) {
  const float* in = logits.data();
  float* o = out.data();
  const size_t n = logits.size();
  for (size_t i = 0; i < n; ++i) o[i] = ExpNonPositive((in[i] - max_logit) * inv_t);
}

// Maps a float to an int32 with the same order (for non-NaN values):
// negative floats have their magnitude bits flipped.
inline int32_t OrderedKey(float f) {
  const auto b = std::bit_cast<int32_t>(f);
  return b ^ ((b >> 31) & 0x7FFFFFFF);
}

// Sum in double with 4 independent accumulators (fixed order: deterministic).
double SumDouble(std::span<const float> w) {
  double s[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= w.size(); i += 4)
    for (int j = 0; j < 4; ++j) s[j] += w[i + j];
  for (; i < w.size(); ++i) s[0] += w[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

}  // namespace

Status SamplingParams::Validate() const {
  if (!InClosed(temperature, 0.0f, 2.0f))
    return InvalidArgument("temperature must be in [0, 2], got {}", temperature);
  if (top_k < 0) return InvalidArgument("top_k must be >= 0 (0 disables it), got {}", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f))
    return InvalidArgument("top_p must be in (0, 1], got {}", top_p);
  if (!InClosed(min_p, 0.0f, 1.0f))
    return InvalidArgument("min_p must be in [0, 1], got {}", min_p);
  if (!(repetition_penalty > 0.0f && repetition_penalty <= 10.0f))
    return InvalidArgument("repetition_penalty must be in (0, 10], got {}", repetition_penalty);
  if (!InClosed(frequency_penalty, -2.0f, 2.0f))
    return InvalidArgument("frequency_penalty must be in [-2, 2], got {}", frequency_penalty);
  if (!InClosed(presence_penalty, -2.0f, 2.0f))
    return InvalidArgument("presence_penalty must be in [-2, 2], got {}", presence_penalty);
  if (penalty_window < 0)
    return InvalidArgument("penalty_window must be >= 0 (0 = whole history), got {}",
                           penalty_window);
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return InvalidArgument("logit_bias token id must be >= 0, got {}", id);
    if (!InClosed(bias, -100.0f, 100.0f))
      return InvalidArgument("logit_bias for token {} must be in [-100, 100], got {}", id, bias);
  }
  return Status::Ok();
}

Sampler::Sampler(const SamplingParams& params, uint64_t default_seed)
    : params_(params), seed_(params.seed.value_or(default_seed)), rng_(seed_) {
  assert(params_.Validate().ok());
}

double Sampler::Uniform01() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

void Sampler::ApplyMaskAndPenalties(std::span<float> logits, std::span<const int32_t> history) {
  const size_t vocab = logits.size();
  if (!mask_.empty()) {
    assert(mask_.size() == vocab);
    const size_t n = std::min(vocab, mask_.size());
    for (size_t i = 0; i < n; ++i)
      if (!mask_[i]) logits[i] = kNegInf;
  }
  for (const auto& [id, bias] : params_.logit_bias)
    if (id >= 0 && static_cast<size_t>(id) < vocab) logits[id] += bias;  // -inf stays -inf
  if (!params_.has_penalties() || history.empty()) return;

  // Count occurrences by sorting a copy of the window: O(w log w) with w
  // typically 64, instead of touching a vocab-sized count array.
  size_t w = history.size();
  if (params_.penalty_window > 0) w = std::min(w, static_cast<size_t>(params_.penalty_window));
  window_.assign(history.end() - static_cast<std::ptrdiff_t>(w), history.end());
  std::sort(window_.begin(), window_.end());
  const float rep = params_.repetition_penalty;
  for (size_t i = 0; i < window_.size();) {
    const int32_t tok = window_[i];
    size_t j = i;
    while (j < window_.size() && window_[j] == tok) ++j;
    const float count = static_cast<float>(j - i);
    i = j;
    if (tok < 0 || static_cast<size_t>(tok) >= vocab) continue;
    float& l = logits[tok];
    if (l == kNegInf) continue;  // masked stays masked
    if (rep != 1.0f) l = l > 0.0f ? l / rep : l * rep;
    l -= count * params_.frequency_penalty + params_.presence_penalty;
  }
}

void Sampler::SelectTopK(std::span<const float> logits) {
  // Min-heap (by rank) of the best k seen so far. Ids arrive in increasing
  // order, so a newcomer that ties the heap's worst loses the tie-break and
  // the test reduces to one float compare: most of the scan is that compare.
  const auto k = static_cast<size_t>(params_.top_k);
  cand_.clear();
  for (size_t i = 0; i < k; ++i) cand_.push_back({static_cast<int32_t>(i), logits[i]});
  std::make_heap(cand_.begin(), cand_.end(), ByWeightDesc{});
  for (size_t i = k; i < logits.size(); ++i) {
    if (logits[i] > cand_.front().w) {
      std::pop_heap(cand_.begin(), cand_.end(), ByWeightDesc{});
      cand_.back() = {static_cast<int32_t>(i), logits[i]};
      std::push_heap(cand_.begin(), cand_.end(), ByWeightDesc{});
    }
  }
}

void Sampler::TruncateToNucleus(double z) {
  // Quickselect on rank, steered by mass: partition around a pivot; if the
  // better side already holds the mass still needed, the nucleus ends there,
  // else all of it (and the pivot) is in and we continue on the worse side.
  const ByWeightDesc before;
  double need = static_cast<double>(params_.top_p) * z;
  size_t lo = 0;
  size_t hi = cand_.size();
  while (hi - lo > 32) {
    size_t a = lo, b = lo + (hi - lo) / 2, c = hi - 1;  // median of three
    if (before(cand_[b], cand_[a])) std::swap(a, b);
    if (before(cand_[c], cand_[b])) std::swap(b, c);
    if (before(cand_[b], cand_[a])) std::swap(a, b);
    std::swap(cand_[b], cand_[hi - 1]);
    const Candidate pivot = cand_[hi - 1];
    const auto mid_it = std::partition(cand_.begin() + lo, cand_.begin() + hi - 1,
                                       [&](const Candidate& x) { return before(x, pivot); });
    const auto mid = static_cast<size_t>(mid_it - cand_.begin());
    std::swap(cand_[mid], cand_[hi - 1]);
    double upper = 0.0;
    for (size_t i = lo; i < mid; ++i) upper += cand_[i].w;
    if (upper >= need) {
      hi = mid;
      continue;
    }
    need -= upper;
    if (pivot.w >= need) {
      cand_.resize(mid + 1);
      return;
    }
    need -= pivot.w;
    lo = mid + 1;
  }
  std::sort(cand_.begin() + lo, cand_.begin() + hi, before);
  for (size_t i = lo; i < hi; ++i) {
    if (cand_[i].w >= need) {
      cand_.resize(i + 1);
      return;
    }
    need -= cand_[i].w;
  }
  cand_.resize(hi);  // rounding left the target just out of reach: keep all
}

size_t Sampler::DrawIndex(std::span<const float> w) {
  // Two levels so that neither pass is one long chain of dependent adds:
  // block sums (4 independent accumulators each), then a walk over blocks,
  // then a walk inside the one block the draw lands in.
  constexpr size_t kBlock = 1024;
  const size_t n = w.size();
  block_sums_.clear();
  double total = 0.0;
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = std::min(n, b + kBlock);
    double s[4] = {0, 0, 0, 0};
    size_t i = b;
    for (; i + 4 <= e; i += 4)
      for (int j = 0; j < 4; ++j) s[j] += w[i + j];
    for (; i < e; ++i) s[0] += w[i];
    block_sums_.push_back((s[0] + s[1]) + (s[2] + s[3]));
    total += block_sums_.back();
  }
  const double u = Uniform01() * total;
  double acc = 0.0;
  size_t last_nonzero = 0;
  for (size_t blk = 0; blk < block_sums_.size(); ++blk) {
    if (block_sums_[blk] == 0.0) continue;
    const size_t b = blk * kBlock, e = std::min(n, b + kBlock);
    if (u >= acc + block_sums_[blk]) {
      acc += block_sums_[blk];
      last_nonzero = e - 1;
      continue;
    }
    for (size_t i = b; i < e; ++i) {
      if (w[i] == 0.0f) continue;
      acc += w[i];
      last_nonzero = i;
      if (u < acc) return i;
    }
    return last_nonzero;  // in-block sum rounded below the block sum
  }
  while (last_nonzero > 0 && w[last_nonzero] == 0.0f) --last_nonzero;
  return last_nonzero;
}

bool Sampler::Weigh(std::span<const float> logits, int32_t best) {
  const float max_logit = logits[best];
  const float inv_t = 1.0f / params_.temperature;
  // After temperature, w = exp((l - max) / T) is the probability relative to
  // the most likely token, so min-p is simply w >= min_p. It keeps a prefix
  // of the ranked order, as top-p does, so filtering by it first and then
  // finding the nucleus against the unfiltered mass z gives top-p followed
  // by min-p exactly.
  const float min_w = params_.min_p;
  const size_t vocab = logits.size();
  const bool top_k = params_.top_k > 0 && static_cast<size_t>(params_.top_k) < vocab;

  if (!top_k && params_.top_p >= 1.0f) {
    // Plain temperature (+ min-p): one vectorized pass, no candidate list.
    weights_.resize(vocab);
    ExpScaled(logits, max_logit, inv_t, weights_);
    if (min_w > 0.0f)
      for (float& w : weights_) w = w >= min_w ? w : 0.0f;
    return true;
  }

  double z = 0.0;
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
    ExpScaled(logits, max_logit, inv_t, weights_);
    z = SumDouble(weights_);
    // Tokens lighter than t = (1 - top_p) * z / V weigh less than
    // (1 - top_p) * z all together, so the tokens at or above t already
    // reach top_p * z and the nucleus lies among them: skip the rest. On
    // real (peaked) logits this leaves a few hundred candidates of 256k.
    const double t = (1.0 - static_cast<double>(params_.top_p)) * z / static_cast<double>(vocab);
    const float floor_w =
        std::max({min_w, static_cast<float>(t), std::numeric_limits<float>::min()});
    cand_.clear();
    for (size_t i = 0; i < vocab; ++i) {
      const float w = weights_[i];
      if (w >= floor_w) cand_.push_back({static_cast<int32_t>(i), w});
    }
  }
  if (params_.top_p < 1.0f) TruncateToNucleus(z);
  assert(!cand_.empty());  // the most likely token always survives
  return false;
}

int32_t Sampler::Sample(std::span<float> logits, std::span<const int32_t> history) {
  ApplyMaskAndPenalties(logits, history);
  if (params_.greedy()) return ArgMax(logits);
  const int32_t best = ArgMax(logits);
  if (best < 0) return -1;
  if (Weigh(logits, best)) return static_cast<int32_t>(DrawIndex(weights_));
  double total = 0.0;
  for (const Candidate& c : cand_) total += c.w;
  const double u = Uniform01() * total;
  double acc = 0.0;
  for (const Candidate& c : cand_) {
    acc += c.w;
    if (u < acc) return c.id;
  }
  return cand_.back().id;  // u landed in the rounding gap at the end
}

void Sampler::Distribution(std::span<float> logits, std::span<const int32_t> history,
                           std::vector<float>* probs) {
  ApplyMaskAndPenalties(logits, history);
  probs->assign(logits.size(), 0.0f);
  const int32_t best = ArgMax(logits);
  if (best < 0) return;
  if (params_.greedy()) {
    (*probs)[best] = 1.0f;
    return;
  }
  // The weights Sample() would draw from, normalized.
  if (Weigh(logits, best)) {
    const double total = SumDouble(weights_);
    for (size_t i = 0; i < weights_.size(); ++i)
      (*probs)[i] = static_cast<float>(weights_[i] / total);
    return;
  }
  double total = 0.0;
  for (const Candidate& c : cand_) total += c.w;
  for (const Candidate& c : cand_) (*probs)[c.id] = static_cast<float>(c.w / total);
}

int32_t ArgMax(std::span<const float> logits) {
  // Pass 1: the max over order-preserving integer keys in 8 independent
  // lanes (integer selects vectorize; float ones do not under the default
  // -ftrapping-math). Pass 2: the first index holding it.
  int32_t lane[8];
  std::fill(lane, lane + 8, std::numeric_limits<int32_t>::min());
  const size_t n = logits.size();
  const float* l = logits.data();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) {
      const int32_t k = OrderedKey(l[i + j]);
      lane[j] = k > lane[j] ? k : lane[j];
    }
  }
  for (; i < n; ++i) lane[0] = std::max(lane[0], OrderedKey(l[i]));
  const int32_t m = *std::max_element(lane, lane + 8);
  if (m <= OrderedKey(kNegInf)) return -1;
  // Branch-free "any hit" per block of 64 (vectorizes), then the exact index.
  for (size_t b = 0; b < n; b += 64) {
    const size_t e = std::min(n, b + 64);
    int hit = 0;
    for (size_t k = b; k < e; ++k) hit |= OrderedKey(l[k]) == m;
    if (!hit) continue;
    for (size_t k = b; k < e; ++k)
      if (OrderedKey(l[k]) == m) return static_cast<int32_t>(k);
  }
  return -1;
}

std::vector<std::pair<int32_t, float>> TopLogprobs(std::span<const float> logits, int k) {
  std::vector<std::pair<int32_t, float>> out;
  const int32_t best = ArgMax(logits);
  if (best < 0 || k <= 0) return out;
  const float max_logit = logits[best];
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
  const double log_z = static_cast<double>(max_logit) + std::log(sum);

  struct Entry {
    int32_t id;
    float w;
  };
  std::vector<Entry> idx(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) idx[i] = {static_cast<int32_t>(i), logits[i]};
  const size_t n = std::min(idx.size(), static_cast<size_t>(k));
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(),
                    ByWeightDesc{});
  out.reserve(n);
  for (size_t i = 0; i < n; ++i)
    out.emplace_back(idx[i].id, static_cast<float>(static_cast<double>(idx[i].w) - log_z));
  return out;
}

}  // namespace brisk
