// Paged KV storage: a pool of fixed-size blocks (block_size token slots), per
// layer, holding K and V in the cache's precision (KvType: F16 by default;
// INT8/FP8 add, for K and for V, one F16 scale per position and group of
// KvScaleGroup(head_dim) values of a KV head).
// Position p of a sequence is slot
// p % block_size of block block_table[p / block_size]. Within a block, K is
// stored transposed ([kv_dim][block_size]: one head dimension of all slots is
// contiguous, so attention scores a whole block with one vector FMA per
// dimension) and V row-major ([block_size][kv_dim]), then (scaled types) the
// K scales [n_kv_heads][groups][block_size] and the V scales (the same);
// a layer's blocks are BlockStride() bytes apart. Which block belongs to which
// sequence is the engine's business (engine/kv_block_pool.h).
//
// This module owns the layout: the forward pass writes K/V with StoreToken()
// and attention reads them through Head(), never by its own offsets.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensor/attention.h"
#include "util/status.h"

namespace brisk {

// cache.kv_precision names: f16 (the default), f32, bf16, int8, fp8.
Expected<KvType> ParseKvPrecision(const std::string& name);
const char* KvPrecisionName(KvType type);
std::vector<std::string> KvPrecisionNames();

struct KvCacheShape {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int block_size = 16;
  KvType type = KvType::kF16;
  int64_t kv_dim() const { return int64_t{n_kv_heads} * head_dim; }
  // Scales per position for K (and as many for V): one per group of
  // KvScaleGroup(head_dim) values of each KV head; 0 for unscaled types.
  int64_t scales_per_slot() const {
    return KvTypeScaled(type) ? kv_dim() / KvScaleGroup(head_dim) : 0;
  }
  // Blocks that hold positions [0, n_positions).
  int64_t BlocksFor(int64_t n_positions) const {
    return (n_positions + block_size - 1) / block_size;
  }
  // Bytes of one layer's block: K and V values, and their scales.
  int64_t BlockStride() const {
    return 2 * int64_t{block_size} * kv_dim() * KvTypeBytes(type) +
           2 * scales_per_slot() * block_size * 2;
  }
  // Bytes one block takes over all layers.
  int64_t BytesPerBlock() const { return int64_t{n_layers} * BlockStride(); }

  // Paging by layer group (sliding-window models; engine/kv_block_pool.h):
  // a pool page holds one block of page_layers layers. Layer l reads and
  // writes slot layer_slot[l] of the pages in its group's block table
  // (group 0: the sequence's blocks; group k > 0: their local pages k - 1).
  // Empty vectors: one group, every layer in every page (slot = layer).
  std::vector<int> layer_group{}, layer_slot{};
  int page_layers = 0;   // 0: n_layers
  int local_groups = 0;  // groups after the first (KvBlockPool::locals_per_block)
  int group(int layer) const { return layer_group.empty() ? 0 : layer_group[layer]; }
  int slot(int layer) const { return layer_slot.empty() ? layer : layer_slot[layer]; }
  int64_t BytesPerPage() const {
    return int64_t{page_layers > 0 ? page_layers : n_layers} * BlockStride();
  }
};

class KvCache {
 public:
  KvCache(const KvCacheShape& shape, int64_t num_blocks);
  // The number of blocks (pages) a memory budget holds (at least 1).
  static int64_t BlocksForBudget(const KvCacheShape& shape, int64_t budget_bytes);

  const KvCacheShape& shape() const { return shape_; }
  int64_t num_blocks() const { return num_blocks_; }  // pool pages
  int64_t bytes() const { return num_blocks_ * shape_.BytesPerPage(); }

  // Stores one token's K and V (kv_dim floats each, KV heads one after the
  // other) at position `pos` of the sequence whose blocks are `block_table`
  // (which must cover pos), in `layer`, rounded to the cache's precision
  // (INT8/FP8: each group of a head's values scaled by its largest magnitude).
  void StoreToken(int layer, const int32_t* block_table, int32_t pos, const float* k,
                  const float* v);
  // The values StoreToken kept for that position, back as floats (what
  // attention computes with).
  void LoadToken(int layer, const int32_t* block_table, int32_t pos, float* k, float* v) const;
  // Where attention reads KV head `kv_head` of `layer` (positions map to
  // blocks through the sequence's block table).
  PagedKvHead Head(int layer, int kv_head) const;

  // Commits every page of the pool now (a server does this at start, so the
  // first requests do not pay for page faults and memory is known up front).
  void Prefault();
  // Copies page src to page dst in every slot (copy-on-write of a shared block).
  void CopyBlock(int64_t src, int64_t dst);
  // Layer slots a page holds (page_layers, or every layer).
  int page_slots() const { return shape_.page_layers > 0 ? shape_.page_layers : shape_.n_layers; }
  // Page `page`'s bytes in slot `slot`: BlockStride() of them. A page's K/V
  // are these over its slots, 0 first (what the disk tier copies out of the
  // pool and back: engine/kv_disk_tier.h).
  std::span<uint8_t> PageSlot(int slot, int64_t page) const {
    return {data_.get() + (slot * num_blocks_ + page) * shape_.BlockStride(),
            static_cast<size_t>(shape_.BlockStride())};
  }

 private:
  // Block `block` of layer `layer`: K as [kv_dim][block_size], then V as
  // [block_size][kv_dim], then the K and V scales.
  uint8_t* KBlock(int layer, int64_t block) const {
    return data_.get() + (shape_.slot(layer) * num_blocks_ + block) * shape_.BlockStride();
  }
  uint8_t* VBlock(int layer, int64_t block) const { return KBlock(layer, block) + values_bytes(); }
  uint8_t* KScales(int layer, int64_t block) const { return VBlock(layer, block) + values_bytes(); }
  uint8_t* VScales(int layer, int64_t block) const {
    return KScales(layer, block) + 2 * shape_.scales_per_slot() * shape_.block_size;
  }
  // Bytes of a block's K (or V) values in one layer.
  int64_t values_bytes() const {
    return int64_t{shape_.block_size} * shape_.kv_dim() * KvTypeBytes(shape_.type);
  }

  KvCacheShape shape_;
  int64_t num_blocks_;
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], Free> data_;
};

}  // namespace brisk
