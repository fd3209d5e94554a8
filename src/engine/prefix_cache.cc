#include "engine/prefix_cache.h"

#include <cassert>

namespace brisk {

PrefixCache::PrefixCache(KvBlockPool* pool, int block_size)
    : pool_(pool),
      block_size_(block_size),
      has_hash_(static_cast<size_t>(pool->num_blocks()), 0),
      hash_(static_cast<size_t>(pool->num_blocks())),
      prev_(static_cast<size_t>(pool->num_blocks()), -1),
      next_(static_cast<size_t>(pool->num_blocks()), -1) {
  assert(block_size > 0);
  pool_->set_keeper(this);
}

PrefixCache::~PrefixCache() {
  listener_ = nullptr;  // it may be gone already; nobody is told of the end
  Clear();
  pool_->set_keeper(nullptr);
}

void PrefixCache::HashFullBlocks(const BlockHash& root, std::span<const int32_t> tokens,
                                 std::vector<BlockHash>* hashes) const {
  const size_t bs = static_cast<size_t>(block_size_);
  const size_t full = tokens.size() / bs;
  while (hashes->size() < full) {
    const size_t i = hashes->size();
    const BlockHash parent = i == 0 ? root : (*hashes)[i - 1];
    hashes->push_back(ChainBlockHash(parent, tokens.subspan(i * bs, bs)));
  }
}

int32_t PrefixCache::MatchPrefix(std::span<const BlockHash> hashes) const {
  int32_t n = 0;
  for (const BlockHash& h : hashes) {
    if (Lookup(h) < 0) break;
    ++n;
  }
  return n;
}

int32_t PrefixCache::AcquirePrefix(std::span<const BlockHash> hashes,
                                   std::vector<int32_t>* blocks) {
  int32_t n = 0;
  for (const BlockHash& h : hashes) {
    const int32_t b = Lookup(h);
    if (b < 0) break;
    if (pool_->RefCount(b) == 0) {  // kept by us: back into use
      Unlink(b);
      pool_->ReviveKept(b);
    } else {
      pool_->Ref(b);
    }
    blocks->push_back(b);
    ++n;
  }
  return n;
}

bool PrefixCache::Publish(int32_t block, const BlockHash& h) {
  assert(pool_->RefCount(block) > 0);
  if (has_hash_[block] || by_hash_.count(h)) return false;
  has_hash_[block] = 1;
  hash_[block] = h;
  by_hash_.emplace(h, block);
  if (tier_) tier_->Offer(h, block, pool_->Locals(block));
  return true;
}

int32_t PrefixCache::Lookup(const BlockHash& h) const {
  auto it = by_hash_.find(h);
  return it == by_hash_.end() ? -1 : it->second;
}

void PrefixCache::Clear() {
  while (lru_head_ >= 0) {
    const int32_t b = lru_head_;
    Unlink(b);
    pool_->ReturnKept(b);
  }
  for (const auto& [h, b] : by_hash_) has_hash_[b] = 0;
  by_hash_.clear();
  if (listener_) listener_->Cleared();
}

// ---- the pool's block keeper -----------------------------------------------

bool PrefixCache::Keep(int32_t block) {
  if (!has_hash_[block]) return false;
  PushMru(block);
  return true;
}

int32_t PrefixCache::Evict() {
  const int32_t b = lru_head_;
  assert(b >= 0);
  Unlink(b);
  if (tier_) tier_->Offer(hash_[b], b, pool_->Locals(b));
  Forget(b);
  return b;
}

void PrefixCache::PushMru(int32_t b) {
  next_[b] = -1;
  prev_[b] = lru_tail_;
  if (lru_tail_ >= 0) next_[lru_tail_] = b;
  lru_tail_ = b;
  if (lru_head_ < 0) lru_head_ = b;
  ++num_free_cached_;
}

void PrefixCache::Unlink(int32_t b) {
  if (prev_[b] >= 0)
    next_[prev_[b]] = next_[b];
  else
    lru_head_ = next_[b];
  if (next_[b] >= 0)
    prev_[next_[b]] = prev_[b];
  else
    lru_tail_ = prev_[b];
  prev_[b] = next_[b] = -1;
  --num_free_cached_;
}

void PrefixCache::Forget(int32_t b) {
  if (!has_hash_[b]) return;
  by_hash_.erase(hash_[b]);
  has_hash_[b] = 0;
  if (listener_) listener_->Forgotten(b);
}

}  // namespace brisk
