#include "engine/kv_block_pool.h"

#include <cassert>

namespace brisk {

KvBlockPool::KvBlockPool(int64_t num_blocks) : ref_(num_blocks, 0) {
  for (int64_t i = 0; i < num_blocks; ++i) free_.push_back(static_cast<int32_t>(i));
}

bool KvBlockPool::Allocate(int64_t n, std::vector<int32_t>* out) {
  if (n < 0 || n > num_free()) return false;
  for (int64_t i = 0; i < n; ++i) {
    int32_t b = free_.front();
    free_.pop_front();
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
    if (--ref_[b] == 0) free_.push_back(b);
  }
}

}  // namespace brisk
