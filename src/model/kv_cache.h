// Paged KV storage: a pool of fixed-size blocks (block_size token slots), per
// layer, holding K and V in F16. Within a block, K is stored transposed
// ([kv_dim][block_size]: one head dimension of all slots is contiguous, so
// attention scores a whole block with one vector FMA per dimension) and V
// row-major ([block_size][kv_dim]). Which block belongs to which sequence is the
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

  // Elements between consecutive blocks of one layer.
  int64_t block_stride() const { return 2 * shape_.block_size * shape_.kv_dim(); }
  // Block `block` of layer `layer`: K as [kv_dim][block_size], V as
  // [block_size][kv_dim], F16.
  uint16_t* KBlock(int layer, int64_t block) { return Base(layer) + block * block_stride(); }
  uint16_t* VBlock(int layer, int64_t block) {
    return KBlock(layer, block) + shape_.block_size * shape_.kv_dim();
  }
  // Commits every page of the pool now (a server does this at start, so the
  // first requests do not pay for page faults and memory is known up front).
  void Prefault();
  // Copies block src to block dst in every layer (copy-on-write of a shared block).
  void CopyBlock(int64_t src, int64_t dst);
  // Base of a layer (block 0's K), for kernels that walk block tables.
  uint16_t* Base(int layer) { return data_.get() + layer * num_blocks_ * block_stride(); }

 private:
  KvCacheShape shape_;
  int64_t num_blocks_;
  struct Free {
    void operator()(uint16_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint16_t[], Free> data_;
};

}  // namespace brisk
