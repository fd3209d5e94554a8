#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/fast_exp.h"
#include "engine/sampler.h"

namespace brisk {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Better = larger logit, lower id on ties: a total order, so the same row
// always gives the same list.
struct Better {
  bool operator()(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) const {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  }
};

}  // namespace

void RowLogprobs::Reset(std::span<const float> logits) {
  logits_ = logits;
  const int32_t best = ArgMax(logits);  // vectorized; -1 when all are -inf
  if (best < 0) {
    log_z_ = std::numeric_limits<double>::infinity();
    return;
  }
  const float max_logit = logits[static_cast<size_t>(best)];
  // sum(exp(l - max)): blocks of 1024 summed in 8 float lanes (vectorizes;
  // each term is in [0, 1], so a block loses < 1e-6 relative), blocks
  // added in double.
  constexpr size_t kBlock = 1024;
  double total = 0;
  const size_t n = logits.size();
  const float* l = logits.data();
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = std::min(n, b + kBlock);
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = b;
    for (; i + 8 <= e; i += 8)
      for (int j = 0; j < 8; ++j) lane[j] += ExpNonPositive(l[i + j] - max_logit);
    for (; i < e; ++i) lane[0] += ExpNonPositive(l[i] - max_logit);
    total +=
        ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
  log_z_ = static_cast<double>(max_logit) + std::log(total);
}

float RowLogprobs::Of(int32_t token) const {
  if (token < 0 || static_cast<size_t>(token) >= logits_.size()) return kNegInf;
  const float l = logits_[static_cast<size_t>(token)];
  if (l == kNegInf) return kNegInf;
  return static_cast<float>(static_cast<double>(l) - log_z_);
}

void RowLogprobs::Top(int k, std::vector<std::pair<int32_t, float>>* out) {
  out->clear();
  const size_t want = std::min(logits_.size(), static_cast<size_t>(std::max(0, k)));
  if (want == 0) return;
  // A min-heap (by Better) of the best `want` seen so far; ids arrive in
  // increasing order, so a newcomer that only ties the worst loses.
  heap_.clear();
  for (size_t i = 0; i < want; ++i) heap_.emplace_back(logits_[i], static_cast<int32_t>(i));
  std::make_heap(heap_.begin(), heap_.end(), Better{});
  for (size_t i = want; i < logits_.size(); ++i) {
    if (logits_[i] > heap_.front().first) {
      std::pop_heap(heap_.begin(), heap_.end(), Better{});
      heap_.back() = {logits_[i], static_cast<int32_t>(i)};
      std::push_heap(heap_.begin(), heap_.end(), Better{});
    }
  }
  std::sort_heap(heap_.begin(), heap_.end(), Better{});  // best first
  out->reserve(want);
  for (const auto& [l, id] : heap_) out->emplace_back(id, Of(id));
}

TokenLogprob MakeTokenLogprob(std::span<const float> logits, int32_t token, int top_k,
                              RowLogprobs* scratch) {
  TokenLogprob r;
  r.token = token;
  scratch->Reset(logits);
  r.logprob = scratch->Of(token);
  scratch->Top(top_k, &r.top);
  return r;
}

}  // namespace brisk
