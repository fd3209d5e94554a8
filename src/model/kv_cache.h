// Paged KV storage: a pool of fixed-size blocks (block_size token slots), per
// layer, holding K and V in F16. Which block belongs to which sequence is the
// engine's business (engine/kv_block_pool.h); the forward pass reads and
// writes slots through each sequence's block table.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace brisk {

struct KvCacheShape {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int block_size = 16;
  int64_t kv_dim() const { return int64_t{n_kv_heads} * head_dim; }
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

  // Slot `slot` (< block_size) of block `block` in layer `layer`: kv_dim F16 values.
  uint16_t* K(int layer, int64_t block, int slot) { return Slot(layer, block, slot, 0); }
  uint16_t* V(int layer, int64_t block, int slot) { return Slot(layer, block, slot, 1); }
  const uint16_t* K(int layer, int64_t block, int slot) const {
    return const_cast<KvCache*>(this)->Slot(layer, block, slot, 0);
  }
  const uint16_t* V(int layer, int64_t block, int slot) const {
    return const_cast<KvCache*>(this)->Slot(layer, block, slot, 1);
  }

 private:
  uint16_t* Slot(int layer, int64_t block, int slot, int kv) {
    int64_t layer_stride = num_blocks_ * 2 * shape_.block_size * shape_.kv_dim();
    int64_t block_stride = 2 * shape_.block_size * shape_.kv_dim();
    return data_.get() + layer * layer_stride + block * block_stride +
           (int64_t{kv} * shape_.block_size + slot) * shape_.kv_dim();
  }

  KvCacheShape shape_;
  int64_t num_blocks_;
  struct Free {
    void operator()(uint16_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint16_t[], Free> data_;
};

}  // namespace brisk
