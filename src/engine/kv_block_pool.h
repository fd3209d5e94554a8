// Allocation of KV cache blocks: reference counts, a free list in eviction
// order, and the hash -> block map of the prefix cache. Pure bookkeeping over
// block ids (the storage is model/kv_cache.h), unit-tested without a model.
//
// A block is used (refcount > 0), free, or free-and-cached: a full block whose
// contents are identified by a chained hash (BlockHash) stays findable after
// its last owner releases it, until Allocate() reuses it. Free blocks are
// reused in this order: never-cached blocks first, then cached blocks, least
// recently released first (LRU). Allocation that cannot be satisfied returns
// false with no side effects; the caller (the scheduler) then preempts.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace brisk {

// 128-bit content hash of a full block: XXH3-128 over the parent block's hash
// and the block's tokens. The root of a chain is a hash of everything else
// that changes KV contents (model, cache salt such as the tenant).
struct BlockHash {
  uint64_t lo = 0, hi = 0;
  bool operator==(const BlockHash&) const = default;
};
BlockHash RootBlockHash(std::string_view salt);
BlockHash ChainBlockHash(const BlockHash& parent, std::span<const int32_t> tokens);

class KvBlockPool {
 public:
  explicit KvBlockPool(int64_t num_blocks);

  int64_t num_blocks() const { return static_cast<int64_t>(ref_.size()); }
  // Blocks with refcount 0 (including cached ones, which Allocate may reuse).
  int64_t num_free() const { return num_free_; }
  int64_t num_used() const { return num_blocks() - num_free(); }
  // Blocks that hold a published hash (used or free).
  int64_t num_cached() const { return static_cast<int64_t>(by_hash_.size()); }
  double usage() const { return num_blocks() ? double(num_used()) / double(num_blocks()) : 0; }

  // Appends n blocks (refcount 1) to *out, evicting cached free blocks as
  // needed, or returns false and changes nothing if fewer than n are free.
  bool Allocate(int64_t n, std::vector<int32_t>* out);
  // Adds a reference to an allocated block (sharing between sequences).
  void Ref(int32_t block);
  // Drops one reference from each block, in the given order; a block
  // reaching zero becomes free (cached blocks at the MRU end). Release a
  // sequence's table with ReleaseTable so its tail is evicted before its head.
  void Release(std::span<const int32_t> blocks);
  void ReleaseTable(std::span<const int32_t> table);
  int32_t RefCount(int32_t block) const { return ref_[block]; }

  // Prefix cache. Lookup does not take a reference; Acquire does (and takes
  // the block off the free list if it was free). -1 when absent.
  int32_t Lookup(const BlockHash& h) const;
  int32_t Acquire(const BlockHash& h);
  // Records that a full, computed block holds the contents `h`. A hash that
  // another block already holds is left alone (the block stays private).
  void Publish(int32_t block, const BlockHash& h);
  bool IsCached(int32_t block) const { return has_hash_[block]; }
  // Forgets every hash (used blocks stay allocated).
  void ClearCache();

 private:
  struct HashOf {
    size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 31)); }
  };
  void PushFree(int32_t b, bool front);
  void Unlink(int32_t b);
  void Forget(int32_t b);

  std::vector<int32_t> ref_;
  // Intrusive doubly linked free list over block ids; head is reused first.
  std::vector<int32_t> prev_, next_;
  std::vector<uint8_t> in_free_;
  int32_t head_ = -1, tail_ = -1;
  int64_t num_free_ = 0;
  std::vector<uint8_t> has_hash_;
  std::vector<BlockHash> hash_;
  std::unordered_map<BlockHash, int32_t, HashOf> by_hash_;
};

}  // namespace brisk
