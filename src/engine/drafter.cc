#include "engine/drafter.h"

#include <algorithm>
#include <cassert>

namespace brisk {

NgramDrafter::NgramDrafter(int min_n, int max_n)
    : min_n_(std::clamp(min_n, 1, 8)), max_n_(std::clamp(max_n, min_n_, 8)) {
  index_.resize(static_cast<size_t>(max_n_) + 1);
  prev_.resize(static_cast<size_t>(max_n_) + 1);
}

uint64_t NgramDrafter::Hash(size_t end, int n) const {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(n);
  for (size_t i = end - static_cast<size_t>(n); i < end; ++i) {
    h ^= static_cast<uint32_t>(tokens_[i]);
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
  }
  return h;
}

void NgramDrafter::IndexNewest() {
  // The n-grams ending just before the newest token now have a successor.
  const size_t end = tokens_.size() - 1;
  for (int n = min_n_; n <= max_n_; ++n) {
    std::vector<uint32_t>& prev = prev_[n];
    prev.resize(end + 1, kNone);
    if (end < static_cast<size_t>(n)) break;
    auto [it, added] = index_[n].try_emplace(Hash(end, n), static_cast<uint32_t>(end));
    if (!added) {
      prev[end] = it->second;
      it->second = static_cast<uint32_t>(end);
    }
  }
}

int NgramDrafter::ContextMatch(size_t end, int n) const {
  const size_t size = tokens_.size();
  int k = 0;
  // Positions end - n - 1 - k and size - n - 1 - k, both inside the sequence.
  while (k < kMaxContext && end >= static_cast<size_t>(n + k + 1) &&
         tokens_[end - n - 1 - k] == tokens_[size - n - 1 - k])
    ++k;
  return k;
}

void NgramDrafter::Append(std::span<const int32_t> tokens) {
  for (int32_t t : tokens) {
    tokens_.push_back(t);
    IndexNewest();
  }
}

void NgramDrafter::Truncate(size_t n) {
  // Rare (a rollback), so the index is simply rebuilt: an entry overwritten
  // by a removed occurrence must point at the latest remaining one again.
  n = std::min(n, tokens_.size());
  std::vector<int32_t> keep(tokens_.begin(), tokens_.end() - static_cast<std::ptrdiff_t>(n));
  tokens_.clear();
  for (auto& m : index_) m.clear();
  for (auto& p : prev_) p.clear();
  Append(keep);
}

void NgramDrafter::Propose(int max_tokens, std::vector<int32_t>* out, std::vector<float>* probs) {
  out->clear();
  if (probs) probs->clear();
  const size_t size = tokens_.size();
  if (max_tokens <= 0) return;
  for (int n = std::min<size_t>(max_n_, size); n >= min_n_; --n) {
    const auto it = index_[n].find(Hash(size, n));
    if (it == index_[n].end()) continue;
    // The chain of places indexed under this hash, latest first; each match
    // is tokens_[e - n, e), continued at e.
    size_t best = size;
    int best_context = -1;
    uint32_t e = it->second;
    for (int c = 0; c < kMaxCandidates && e != kNone; ++c, e = prev_[n][e]) {
      if (e >= size || e < static_cast<size_t>(n)) continue;
      if (!std::equal(tokens_.begin() + static_cast<std::ptrdiff_t>(e - n),
                      tokens_.begin() + static_cast<std::ptrdiff_t>(e), tokens_.end() - n))
        continue;  // a hash collision
      const int context = ContextMatch(e, n);
      if (context > best_context) {
        best = e;
        best_context = context;
        if (context == kMaxContext) break;
      }
    }
    if (best_context < 0) continue;
    const size_t end = best;
    const size_t take = std::min(static_cast<size_t>(max_tokens), size - end);
    out->assign(tokens_.begin() + static_cast<std::ptrdiff_t>(end),
                tokens_.begin() + static_cast<std::ptrdiff_t>(end + take));
    return;
  }
}

}  // namespace brisk
