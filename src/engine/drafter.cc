#include "engine/drafter.h"

#include <algorithm>
#include <cassert>

namespace brisk {

NgramDrafter::NgramDrafter(int min_n, int max_n)
    : min_n_(std::clamp(min_n, 1, 8)), max_n_(std::clamp(max_n, min_n_, 8)) {
  index_.resize(static_cast<size_t>(max_n_) + 1);
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
    if (end < static_cast<size_t>(n)) break;
    index_[n][Hash(end, n)] = static_cast<uint32_t>(end);
  }
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
    const size_t end = it->second;  // the match is tokens_[end - n, end), continued at end
    if (end >= size || end < static_cast<size_t>(n)) continue;
    if (!std::equal(tokens_.begin() + static_cast<std::ptrdiff_t>(end - n),
                    tokens_.begin() + static_cast<std::ptrdiff_t>(end), tokens_.end() - n))
      continue;  // a hash collision or a stale entry
    const size_t take = std::min(static_cast<size_t>(max_tokens), size - end);
    out->assign(tokens_.begin() + static_cast<std::ptrdiff_t>(end),
                tokens_.begin() + static_cast<std::ptrdiff_t>(end + take));
    return;
  }
}

}  // namespace brisk
