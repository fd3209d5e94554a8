#include "engine/kv_block_pool.h"

#include <cassert>

namespace brisk {

KvBlockPool::KvBlockPool(int64_t num_blocks) : ref_(num_blocks, 0), kept_(num_blocks, 0) {
  // Block 0 is reused first.
  clean_.reserve(static_cast<size_t>(num_blocks));
  for (int64_t i = num_blocks - 1; i >= 0; --i) clean_.push_back(static_cast<int32_t>(i));
}

bool KvBlockPool::Allocate(int64_t n, std::vector<int32_t>* out) {
  if (n < 0 || n > num_free()) return false;
  for (int64_t i = 0; i < n; ++i) {
    int32_t b;
    if (!clean_.empty()) {
      b = clean_.back();
      clean_.pop_back();
    } else {
      b = keeper_->Evict();  // num_kept_ > 0, so there is a keeper
      assert(kept_[b]);
      kept_[b] = 0;
      --num_kept_;
    }
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

void KvBlockPool::MakeFree(int32_t block) {
  if (keeper_ && keeper_->Keep(block)) {
    kept_[block] = 1;
    ++num_kept_;
  } else {
    clean_.push_back(block);
  }
}

void KvBlockPool::Release(std::span<const int32_t> blocks) {
  for (int32_t b : blocks) {
    assert(ref_[b] > 0);
    if (--ref_[b] == 0) MakeFree(b);
  }
}

void KvBlockPool::ReleaseTable(std::span<const int32_t> table) {
  for (auto it = table.rbegin(); it != table.rend(); ++it)
    Release(std::span<const int32_t>(&*it, 1));
}

void KvBlockPool::set_keeper(BlockKeeper* keeper) {
  assert(num_kept_ == 0);
  keeper_ = keeper;
}

void KvBlockPool::ReviveKept(int32_t block) {
  assert(kept_[block] && ref_[block] == 0);
  kept_[block] = 0;
  --num_kept_;
  ref_[block] = 1;
}

void KvBlockPool::ReturnKept(int32_t block) {
  assert(kept_[block] && ref_[block] == 0);
  kept_[block] = 0;
  --num_kept_;
  clean_.push_back(block);
}

}  // namespace brisk
