// Allocation of KV cache blocks: a free list plus reference counts. Pure
// bookkeeping over block ids (the storage is model/kv_cache.h), so it is
// unit-tested without a model. Allocation that cannot be satisfied returns
// false with no side effects; the caller (scheduler) then preempts.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace brisk {

class KvBlockPool {
 public:
  explicit KvBlockPool(int64_t num_blocks);

  int64_t num_blocks() const { return static_cast<int64_t>(ref_.size()); }
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t num_used() const { return num_blocks() - num_free(); }
  double usage() const { return num_blocks() ? double(num_used()) / double(num_blocks()) : 0; }

  // Appends n fresh blocks (refcount 1) to *out, or returns false and
  // changes nothing if fewer than n are free.
  bool Allocate(int64_t n, std::vector<int32_t>* out);
  // Adds a reference to an allocated block (sharing between sequences).
  void Ref(int32_t block);
  // Drops one reference from each block; blocks reaching zero become free.
  void Release(std::span<const int32_t> blocks);
  int32_t RefCount(int32_t block) const { return ref_[block]; }

 private:
  std::vector<int32_t> ref_;
  std::deque<int32_t> free_;  // eviction order: front is reused first
};

}  // namespace brisk
