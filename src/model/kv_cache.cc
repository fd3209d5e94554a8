#include "model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "tensor/float16.h"
#include "tensor/kernels.h"

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

void KvCache::StoreToken(int layer, const int32_t* block_table, int32_t pos, const float* k,
                         const float* v) {
  const int bs = shape_.block_size;
  const int64_t kv_dim = shape_.kv_dim();
  const int32_t block = block_table[pos / bs];
  const int slot = pos % bs;
  uint16_t* kb = KBlock(layer, block);  // [kv_dim][bs]: K transposed
  for (int64_t e = 0; e < kv_dim; ++e) kb[e * bs + slot] = FloatToHalf(k[e]);
  F32ToF16Row(v, VBlock(layer, block) + int64_t{slot} * kv_dim, kv_dim);
}

PagedKvHead KvCache::Head(int layer, int kv_head) const {
  PagedKvHead h;
  h.k_base = KBlock(layer, 0) + int64_t{kv_head} * shape_.head_dim * shape_.block_size;
  h.v_base = VBlock(layer, 0) + int64_t{kv_head} * shape_.head_dim;
  h.block_size = shape_.block_size;
  h.block_stride = block_stride();
  h.v_row_stride = shape_.kv_dim();
  return h;
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
