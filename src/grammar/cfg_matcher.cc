#include "grammar/cfg_matcher.h"

#include <algorithm>

namespace brisk {
namespace {

// Dedupe table sizes: powers of two. It starts small (a few cache lines
// for the usual few dozen keys of a set) and doubles when half full, up to
// twice the keys one set can hold (items plus predicted / completed
// markers).
constexpr size_t kMinTableSize = 256;
constexpr size_t kMaxTableSize = 4 * CfgMatcher::kMaxItemsPerSet;

size_t Slot(uint64_t key, size_t size) {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & (size - 1);
}

uint64_t ItemKey(uint32_t pos, uint32_t origin) { return (uint64_t{origin} << 32) | pos; }
// Markers use positions no item can have (items' positions are < 2^30).
uint64_t PredictedKey(uint32_t rule) { return uint64_t{kTerminalBit | rule}; }
uint64_t CompletedKey(uint32_t rule, uint32_t origin) {
  return (uint64_t{origin} << 32) | kEndBit | rule;
}

}  // namespace

CfgMatcher::CfgMatcher(std::shared_ptr<const CfgGrammar> grammar) : g_(std::move(grammar)) {
  keys_.assign(kMinTableSize, 0);
  stamps_.assign(kMinTableSize, 0);
  set_start_.push_back(0);
  NewGeneration();
  Add(g_->start_pos, 0);
  Closure();
}

void CfgMatcher::NewGeneration() {
  used_ = 0;
  if (++gen_ == 0) {  // wrapped: forget every old stamp
    std::fill(stamps_.begin(), stamps_.end(), 0);
    gen_ = 1;
  }
}

void CfgMatcher::Grow() {
  const size_t size = keys_.size() * 2;
  std::vector<uint64_t> keys(size, 0);
  std::vector<uint32_t> stamps(size, 0);
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (stamps_[i] != gen_) continue;
    size_t j = Slot(keys_[i], size);
    while (stamps[j] == gen_) j = (j + 1) & (size - 1);
    stamps[j] = gen_;
    keys[j] = keys_[i];
  }
  keys_.swap(keys);
  stamps_.swap(stamps);
}

bool CfgMatcher::Insert(uint64_t key) {
  if (used_ >= keys_.size() / 2) {
    if (keys_.size() >= kMaxTableSize) {  // more keys than a set may hold: reject the byte
      overflow_ = true;
      return false;
    }
    Grow();
  }
  const size_t mask = keys_.size() - 1;
  size_t i = Slot(key, keys_.size());
  while (stamps_[i] == gen_) {
    if (keys_[i] == key) return false;
    i = (i + 1) & mask;
  }
  stamps_[i] = gen_;
  keys_[i] = key;
  ++used_;
  return true;
}

bool CfgMatcher::Add(uint32_t pos, uint32_t origin, bool unique) {
  if (!unique && !Insert(ItemKey(pos, origin))) return !overflow_;
  if (items_.size() - set_start_.back() >= kMaxItemsPerSet || items_.size() >= kMaxChartItems) {
    overflow_ = true;
    return false;
  }
  items_.push_back({pos, origin, g_->syms[pos]});
  return true;
}

bool CfgMatcher::Closure() {
  const CfgGrammar& g = *g_;
  const uint32_t k = static_cast<uint32_t>(set_start_.size() - 1);
  size_t work = 0;  // items looked at by completions
  for (size_t i = set_start_.back(); i < items_.size(); ++i) {
    const Item it = items_[i];
    const uint32_t s = it.sym;
    if (s & kTerminalBit) continue;
    if (s & kEndBit) {
      // Completion. An empty derivation (origin == k) needs nothing: the
      // prediction of a nullable rule already stepped over it.
      const uint32_t lhs = s & kSymbolMask;
      if (it.origin == k || !Insert(CompletedKey(lhs, it.origin))) continue;
      const size_t begin = set_start_[it.origin], end = set_start_[it.origin + 1];
      work += end - begin;
      if (work > kMaxWorkPerSet) {
        overflow_ = true;
        return false;
      }
      for (size_t j = begin; j < end; ++j) {
        const Item w = items_[j];
        if (w.sym == lhs && !Add(w.pos + 1, w.origin)) return false;
      }
      continue;
    }
    if (Insert(PredictedKey(s))) {
      for (uint32_t p = g.rule_first[s]; p < g.rule_first[s + 1]; ++p)
        if (!Add(g.prod_start[p], k, /*unique=*/true)) return false;
    }
    if (g.nullable[s] && !Add(it.pos + 1, it.origin)) return false;
  }
  return !overflow_;
}

bool CfgMatcher::Advance(uint8_t byte) {
  if (!g_) return false;
  const CfgGrammar& g = *g_;
  const size_t prev = set_start_.back(), base = items_.size();
  set_start_.push_back(static_cast<uint32_t>(base));
  NewGeneration();
  overflow_ = false;
  for (size_t i = prev; i < base; ++i) {
    const Item it = items_[i];
    const uint32_t s = it.sym;
    if ((s & kTerminalBit) && ByteSetHas(g.byte_sets[s & kSymbolMask], byte))
      if (!Add(it.pos + 1, it.origin, /*unique=*/true)) break;
  }
  if (items_.size() == base || !Closure()) {
    items_.resize(base);
    set_start_.pop_back();
    return false;
  }
  return true;
}

bool CfgMatcher::AdvanceBytes(std::string_view bytes) {
  const size_t sets = num_sets();
  for (char c : bytes) {
    if (!Advance(static_cast<uint8_t>(c))) {
      Rollback(sets);
      return false;
    }
  }
  return true;
}

bool CfgMatcher::CanEnd() const {
  if (!g_) return false;
  const uint32_t done = g_->start_pos + 1;
  for (size_t i = set_start_.back(); i < items_.size(); ++i)
    if (items_[i].pos == done && items_[i].origin == 0) return true;
  return false;
}

bool CfgMatcher::Finished() const {
  if (!g_) return true;
  for (size_t i = set_start_.back(); i < items_.size(); ++i)
    if (items_[i].sym & kTerminalBit) return false;
  return true;
}

void CfgMatcher::Rollback(size_t sets) {
  if (sets == 0 || sets >= set_start_.size()) return;
  items_.resize(set_start_[sets]);
  set_start_.resize(sets);
}

void CfgMatcher::CopyFrom(const CfgMatcher& other) {
  g_ = other.g_;
  items_.assign(other.items_.begin(), other.items_.end());
  set_start_.assign(other.set_start_.begin(), other.set_start_.end());
  if (keys_.empty()) {
    keys_.assign(kMinTableSize, 0);
    stamps_.assign(kMinTableSize, 0);
    gen_ = 0;
  }
}

}  // namespace brisk
