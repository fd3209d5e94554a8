#include "engine/kv_block_pool.h"

#include <algorithm>
#include <cassert>

namespace brisk {

KvBlockPool::KvBlockPool(int64_t num_blocks, int locals_per_block)
    : ref_(num_blocks, 0),
      kept_(num_blocks, 0),
      locals_per_block_(locals_per_block),
      locals_(static_cast<size_t>(num_blocks * locals_per_block), -1) {
  // Block 0 is reused first.
  clean_.reserve(static_cast<size_t>(num_blocks));
  for (int64_t i = num_blocks - 1; i >= 0; --i) clean_.push_back(static_cast<int32_t>(i));
}

// A free page: a clean one, else the keeper gives up a kept block (its local
// pages become clean).
int32_t KvBlockPool::TakePage() {
  if (clean_.empty()) {
    const int32_t b = keeper_->Evict();  // num_kept_ > 0, so there is a keeper
    assert(kept_[b]);
    kept_[b] = 0;
    num_kept_ -= 1 + Attached(b);
    FreeLocals(b);
    return b;
  }
  const int32_t b = clean_.back();
  clean_.pop_back();
  return b;
}

bool KvBlockPool::Allocate(int64_t n, std::vector<int32_t>* out) {
  if (n < 0 || PagesFor(n) > num_free()) return false;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t b = TakePage();
    assert(ref_[b] == 0);
    ref_[b] = 1;
    for (int k = 0; k < locals_per_block_; ++k) {
      const int32_t p = TakePage();
      assert(ref_[p] == 0);
      ref_[p] = 1;  // held by its block
      locals_[b * int64_t{locals_per_block_} + k] = p;
    }
    out->push_back(b);
  }
  high_water_ = std::max(high_water_, num_used());
  return true;
}

std::span<const int32_t> KvBlockPool::Locals(int32_t block) const {
  if (!Attached(block)) return {};
  return std::span<const int32_t>(locals_).subspan(block * int64_t{locals_per_block_},
                                                   locals_per_block_);
}

void KvBlockPool::FreeLocals(int32_t block) {
  const int64_t n = Attached(block);  // before the loop clears the first entry
  for (int64_t k = 0; k < n; ++k) {
    int32_t& p = locals_[block * int64_t{locals_per_block_} + k];
    ref_[p] = 0;
    clean_.push_back(p);
    p = -1;
  }
}

void KvBlockPool::DropLocals(int32_t block) {
  assert(ref_[block] > 0);
  FreeLocals(block);
}

void KvBlockPool::Ref(int32_t block) {
  assert(ref_[block] > 0);
  ++ref_[block];
}

void KvBlockPool::MakeFree(int32_t block) {
  if (keeper_ && keeper_->Keep(block)) {
    kept_[block] = 1;
    num_kept_ += 1 + Attached(block);
  } else {
    FreeLocals(block);
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
  num_kept_ -= 1 + Attached(block);
  ref_[block] = 1;
}

void KvBlockPool::ReturnKept(int32_t block) {
  assert(kept_[block] && ref_[block] == 0);
  kept_[block] = 0;
  num_kept_ -= 1 + Attached(block);
  FreeLocals(block);
  clean_.push_back(block);
}

}  // namespace brisk
