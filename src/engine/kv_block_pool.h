// Allocation of KV cache blocks: reference counts and free blocks. Pure
// bookkeeping over block ids (the storage is model/kv_cache.h), unit-tested
// without a model. Sequences hold their blocks in append-only block tables
// (std::vector<int32_t>); the pool only counts references to them.
//
// A block is used (refcount > 0), free, or free-and-kept: when its last
// reference goes, a block keeper (the prefix cache, engine/prefix_cache.h)
// may keep it because its contents can still be reused. Kept blocks count as
// free; Allocate() reuses every other free block first (most recently
// released first), then asks the keeper which kept block to give up.
// Allocation that cannot be satisfied returns false with no side effects; the
// caller (the scheduler) then preempts.
//
// Sliding-window models (Gemma 3) page their KV by layer group: a block id
// is a page holding one block of the global layers, and each block carries
// `locals_per_block` more pages for the local (sliding-window) layers,
// allocated with it. A block that has left the window of the sequence
// holding it drops its local pages (DropLocals), so KV memory grows with the
// global layers only. Every count here is in pages; a kept block's local
// pages count as kept with it and go back to the pool when it is evicted.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace brisk {

class KvBlockPool {
 public:
  // Holds free blocks whose contents are still worth something, and chooses
  // the order in which they are reused.
  class BlockKeeper {
   public:
    // `block`'s last reference is gone. True: the keeper holds it from now on.
    virtual bool Keep(int32_t block) = 0;
    // Gives up the kept block to reuse next; it forgets the block's contents.
    virtual int32_t Evict() = 0;

   protected:
    ~BlockKeeper() = default;
  };

  explicit KvBlockPool(int64_t num_blocks, int locals_per_block = 0);

  int64_t num_blocks() const { return static_cast<int64_t>(ref_.size()); }
  int locals_per_block() const { return locals_per_block_; }
  // Pages n blocks take while they hold their local pages.
  int64_t PagesFor(int64_t n_blocks) const { return n_blocks * (1 + locals_per_block_); }
  // Blocks with refcount 0 (including kept ones, which Allocate may reuse).
  int64_t num_free() const { return static_cast<int64_t>(clean_.size()) + num_kept_; }
  int64_t num_used() const { return num_blocks() - num_free(); }
  int64_t num_kept() const { return num_kept_; }
  double usage() const { return num_blocks() ? double(num_used()) / double(num_blocks()) : 0; }
  // The most pages in use at once since construction (within a step too:
  // a prefill chunk holds its new blocks' local pages until the step ends).
  int64_t high_water() const { return high_water_; }

  // Appends n blocks (refcount 1, each with its local pages) to *out,
  // evicting kept blocks as needed, or returns false and changes nothing if
  // fewer than PagesFor(n) pages are free.
  bool Allocate(int64_t n, std::vector<int32_t>* out);
  // Adds a reference to an allocated block (sharing between sequences).
  void Ref(int32_t block);
  // Drops one reference from each block, in the given order; a block
  // reaching zero is offered to the keeper, else becomes free. Release a
  // sequence's table with ReleaseTable (tail first), so that a keeper
  // evicting least recently released first drops its tail before its head.
  void Release(std::span<const int32_t> blocks);
  void ReleaseTable(std::span<const int32_t> table);
  int32_t RefCount(int32_t block) const { return ref_[block]; }
  // The local pages of a block (locals_per_block of them), or an empty span
  // once they were dropped.
  std::span<const int32_t> Locals(int32_t block) const;
  // A held block leaves the sliding window: its local pages become free.
  void DropLocals(int32_t block);

  // The keeper's side. At most one keeper; it may be set or cleared
  // (nullptr) only while it keeps no blocks.
  void set_keeper(BlockKeeper* keeper);
  // A kept block is used again (a prefix-cache hit): refcount 0 -> 1. The
  // keeper has already let go of it.
  void ReviveKept(int32_t block);
  // The keeper lets go of a kept block without reusing it: it becomes an
  // ordinary free block.
  void ReturnKept(int32_t block);

 private:
  void MakeFree(int32_t block);
  int32_t TakePage();
  int64_t Attached(int32_t block) const {
    return locals_per_block_ && locals_[block * int64_t{locals_per_block_}] >= 0 ? locals_per_block_
                                                                                 : 0;
  }
  void FreeLocals(int32_t block);

  std::vector<int32_t> ref_;
  std::vector<uint8_t> kept_;
  // Free, not kept; the back is reused first.
  std::vector<int32_t> clean_;
  int64_t num_kept_ = 0;  // pages: kept blocks and their local pages
  int64_t high_water_ = 0;
  BlockKeeper* keeper_ = nullptr;
  int locals_per_block_ = 0;
  std::vector<int32_t> locals_;  // [block][locals_per_block]; -1: none
};

}  // namespace brisk
