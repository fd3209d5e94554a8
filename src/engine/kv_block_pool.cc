#include "engine/kv_block_pool.h"

#include <xxhash.h>

#include <cassert>
#include <cstring>
#include <vector>

namespace brisk {

BlockHash RootBlockHash(std::string_view salt) {
  XXH128_hash_t h = XXH3_128bits_withSeed(salt.data(), salt.size(), 0xb15cull);
  return {h.low64, h.high64};
}

BlockHash ChainBlockHash(const BlockHash& parent, std::span<const int32_t> tokens) {
  // The parent hash is the seed of the low half and mixed into the input, so
  // equal tokens under different parents differ in all 128 bits.
  thread_local std::vector<uint8_t> buf;
  buf.resize(sizeof(parent) + tokens.size_bytes());
  std::memcpy(buf.data(), &parent, sizeof(parent));
  std::memcpy(buf.data() + sizeof(parent), tokens.data(), tokens.size_bytes());
  XXH128_hash_t h = XXH3_128bits_withSeed(buf.data(), buf.size(), parent.lo);
  return {h.low64, h.high64};
}

KvBlockPool::KvBlockPool(int64_t num_blocks)
    : ref_(num_blocks, 0),
      prev_(num_blocks, -1),
      next_(num_blocks, -1),
      in_free_(num_blocks, 0),
      has_hash_(num_blocks, 0),
      hash_(num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i) PushFree(static_cast<int32_t>(i), false);
}

void KvBlockPool::PushFree(int32_t b, bool front) {
  assert(!in_free_[b]);
  in_free_[b] = 1;
  ++num_free_;
  if (front) {
    prev_[b] = -1;
    next_[b] = head_;
    if (head_ >= 0) prev_[head_] = b;
    head_ = b;
    if (tail_ < 0) tail_ = b;
  } else {
    next_[b] = -1;
    prev_[b] = tail_;
    if (tail_ >= 0) next_[tail_] = b;
    tail_ = b;
    if (head_ < 0) head_ = b;
  }
}

void KvBlockPool::Unlink(int32_t b) {
  assert(in_free_[b]);
  in_free_[b] = 0;
  --num_free_;
  if (prev_[b] >= 0)
    next_[prev_[b]] = next_[b];
  else
    head_ = next_[b];
  if (next_[b] >= 0)
    prev_[next_[b]] = prev_[b];
  else
    tail_ = prev_[b];
  prev_[b] = next_[b] = -1;
}

void KvBlockPool::Forget(int32_t b) {
  if (!has_hash_[b]) return;
  by_hash_.erase(hash_[b]);
  has_hash_[b] = 0;
}

bool KvBlockPool::Allocate(int64_t n, std::vector<int32_t>* out) {
  if (n < 0 || n > num_free_) return false;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t b = head_;
    Unlink(b);
    Forget(b);  // evicted from the prefix cache
    assert(ref_[b] == 0);
    ref_[b] = 1;
    out->push_back(b);
  }
  return true;
}

void KvBlockPool::Ref(int32_t block) {
  assert(ref_[block] > 0);
  ++ref_[block];
}

void KvBlockPool::Release(std::span<const int32_t> blocks) {
  for (int32_t b : blocks) {
    assert(ref_[b] > 0);
    if (--ref_[b] == 0) PushFree(b, /*front=*/!has_hash_[b]);
  }
}

void KvBlockPool::ReleaseTable(std::span<const int32_t> table) {
  for (auto it = table.rbegin(); it != table.rend(); ++it)
    Release(std::span<const int32_t>(&*it, 1));
}

int32_t KvBlockPool::Lookup(const BlockHash& h) const {
  auto it = by_hash_.find(h);
  return it == by_hash_.end() ? -1 : it->second;
}

int32_t KvBlockPool::Acquire(const BlockHash& h) {
  const int32_t b = Lookup(h);
  if (b < 0) return -1;
  if (ref_[b] == 0) Unlink(b);
  ++ref_[b];
  return b;
}

void KvBlockPool::Publish(int32_t block, const BlockHash& h) {
  assert(ref_[block] > 0);
  if (has_hash_[block] || by_hash_.count(h)) return;
  has_hash_[block] = 1;
  hash_[block] = h;
  by_hash_.emplace(h, block);
}

void KvBlockPool::ClearCache() {
  for (auto& [h, b] : by_hash_) {
    has_hash_[b] = 0;
    if (in_free_[b]) {  // move to the front: nothing left to keep it for
      Unlink(b);
      PushFree(b, true);
    }
  }
  by_hash_.clear();
}

}  // namespace brisk
