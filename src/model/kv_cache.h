// Paged KV storage: a pool of fixed-size blocks (block_size token slots), per
// layer, holding K and V in F16. Position p of a sequence is slot
// p % block_size of block block_table[p / block_size]. Within a block, K is
// stored transposed ([kv_dim][block_size]: one head dimension of all slots is
// contiguous, so attention scores a whole block with one vector FMA per
// dimension) and V row-major ([block_size][kv_dim]); a layer's blocks are
// block_stride() elements apart, K then V. Which block belongs to which
// sequence is the engine's business (engine/kv_block_pool.h).
//
// This module owns the layout: the forward pass writes K/V with StoreToken()
// and attention reads them through Head(), never by its own offsets.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "tensor/attention.h"

namespace brisk {

struct KvCacheShape {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int block_size = 16;
  int64_t kv_dim() const { return int64_t{n_kv_heads} * head_dim; }
  // Blocks that hold positions [0, n_positions).
  int64_t BlocksFor(int64_t n_positions) const {
    return (n_positions + block_size - 1) / block_size;
  }
  // Bytes one block takes over all layers (K and V, F16).
  int64_t BytesPerBlock() const { return int64_t{n_layers} * 2 * block_size * kv_dim() * 2; }
};

class KvCache {
 public:
  KvCache(const KvCacheShape& shape, int64_t num_blocks);
  // The number of blocks a memory budget holds (at least 1).
  static int64_t BlocksForBudget(const KvCacheShape& shape, int64_t budget_bytes);

  const KvCacheShape& shape() const { return shape_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t bytes() const { return num_blocks_ * shape_.BytesPerBlock(); }

  // Stores one token's K and V (kv_dim floats each, KV heads one after the
  // other) at position `pos` of the sequence whose blocks are `block_table`
  // (which must cover pos), in `layer`, rounded to F16.
  void StoreToken(int layer, const int32_t* block_table, int32_t pos, const float* k,
                  const float* v);
  // Where attention reads KV head `kv_head` of `layer` (positions map to
  // blocks through the sequence's block table).
  PagedKvHead Head(int layer, int kv_head) const;

  // Commits every page of the pool now (a server does this at start, so the
  // first requests do not pay for page faults and memory is known up front).
  void Prefault();
  // Copies block src to block dst in every layer (copy-on-write of a shared block).
  void CopyBlock(int64_t src, int64_t dst);

 private:
  // Elements between consecutive blocks of one layer.
  int64_t block_stride() const { return 2 * shape_.block_size * shape_.kv_dim(); }
  // Block `block` of layer `layer`: K as [kv_dim][block_size], then V as
  // [block_size][kv_dim].
  uint16_t* KBlock(int layer, int64_t block) const {
    return data_.get() + (layer * num_blocks_ + block) * block_stride();
  }
  uint16_t* VBlock(int layer, int64_t block) const {
    return KBlock(layer, block) + shape_.block_size * shape_.kv_dim();
  }

  KvCacheShape shape_;
  int64_t num_blocks_;
  struct Free {
    void operator()(uint16_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint16_t[], Free> data_;
};

}  // namespace brisk
