#include "model/kv_cache.h"

#include <algorithm>
#include <cstring>

namespace brisk {

KvCache::KvCache(const KvCacheShape& shape, int64_t num_blocks)
    : shape_(shape),
      num_blocks_(num_blocks),
      // calloc: large pools come zeroed from the OS and are committed lazily,
      // page by page, as blocks are first written.
      data_(static_cast<uint16_t*>(
          std::calloc(static_cast<size_t>(num_blocks * shape.BytesPerBlock()), 1))) {}

int64_t KvCache::BlocksForBudget(const KvCacheShape& shape, int64_t budget_bytes) {
  return std::max<int64_t>(1, budget_bytes / shape.BytesPerBlock());
}

void KvCache::Prefault() {
  // Writing one byte per page commits it; the values stay zero.
  auto* page = reinterpret_cast<volatile uint8_t*>(data_.get());
  const int64_t n = bytes();
  for (int64_t i = 0; i < n; i += 4096) page[i] = 0;
}

void KvCache::CopyBlock(int64_t src, int64_t dst) {
  for (int l = 0; l < shape_.n_layers; ++l)
    std::memcpy(KBlock(l, dst), KBlock(l, src), block_stride() * sizeof(uint16_t));
}

}  // namespace brisk
