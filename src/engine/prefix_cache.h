// The prefix cache: finds the KV blocks a sequence can reuse because another
// sequence already computed the same leading tokens, so no prefix is
// computed twice.
//
// Only full blocks are cached. A full block is named by a chained hash
// (BlockHash) of its parent block's hash and its own tokens; the chain starts
// at a root that hashes everything else that changes KV contents (the cache
// salt: the tenant, so tenants never see each other's blocks). Equal hashes
// mean equal contents, so the cached prefix of a sequence is the longest run
// of its block hashes, from the first, that the cache holds.
//
// A tier under the cache (engine/kv_tier.h: the disk tier) is offered each
// block when it is published and when it is evicted, so a later miss here
// may still be found there.
//
// The blocks themselves belong to the KvBlockPool. The cache holds the
// hash -> block map and, as the pool's block keeper, the free blocks that
// still hold a hash: when a cached block's last owner lets go it stays
// findable, and the pool reuses such blocks only after every other free
// block, least recently released first. A block the pool takes back for
// reuse loses its hash.
//
// Pure bookkeeping, no threads: the scheduler calls it (hash the sequence's
// full blocks, acquire the cached prefix on admission, publish blocks as they
// fill).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/block_hash.h"
#include "engine/kv_block_pool.h"
#include "engine/kv_tier.h"

namespace brisk {

class PrefixCache final : public KvBlockPool::BlockKeeper {
 public:
  // Told when blocks lose their hash (KV events: engine/kv_events.h).
  class Listener {
   public:
    virtual void Forgotten(int32_t block) = 0;  // evicted for reuse
    virtual void Cleared() = 0;                 // every hash forgotten

   protected:
    ~Listener() = default;
  };

  // Becomes `pool`'s block keeper until destroyed; the pool must outlive it.
  PrefixCache(KvBlockPool* pool, int block_size);
  // Hands every kept block back to the pool as an ordinary free block.
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  int block_size() const { return block_size_; }

  // Extends *hashes to one hash per full block of `tokens`, chained from
  // `root`. Hashes already in *hashes are kept (they must be of the same
  // root and tokens), so a growing sequence hashes each block once.
  void HashFullBlocks(const BlockHash& root, std::span<const int32_t> tokens,
                      std::vector<BlockHash>* hashes) const;

  // How many of `hashes`, from the first, have a cached block.
  int32_t MatchPrefix(std::span<const BlockHash> hashes) const;
  // The same, and appends those blocks to *blocks with one reference each
  // (a free cached block goes back into use). Returns how many.
  int32_t AcquirePrefix(std::span<const BlockHash> hashes, std::vector<int32_t>* blocks);
  // Records that `block` (allocated, full, its K/V computed) holds the
  // contents `h`. A hash another block already holds is left alone (this
  // block stays private), and so is a block that already has a hash. True
  // when the block now holds `h` and did not before.
  bool Publish(int32_t block, const BlockHash& h);
  // At most one listener; nullptr: none.
  void set_listener(Listener* listener) { listener_ = listener; }
  // The tier under this cache, offered every block published and every
  // block evicted for reuse before it is forgotten (Clear() offers none);
  // nullptr: none.
  void set_tier(KvTier* tier) { tier_ = tier; }

  // The block holding `h`, or -1. Takes no reference.
  int32_t Lookup(const BlockHash& h) const;
  bool IsCached(int32_t block) const { return has_hash_[block]; }
  // Blocks that hold a hash (used or free).
  int64_t num_cached() const { return static_cast<int64_t>(by_hash_.size()); }
  // Free blocks kept for their hash (the pool counts them as free).
  int64_t num_free_cached() const { return num_free_cached_; }
  // Forgets every hash; kept blocks become ordinary free blocks.
  void Clear();

 private:
  // KvBlockPool::BlockKeeper: free cached blocks in an LRU list.
  bool Keep(int32_t block) override;
  int32_t Evict() override;
  void PushMru(int32_t block);
  void Unlink(int32_t block);
  void Forget(int32_t block);

  KvBlockPool* pool_;
  Listener* listener_ = nullptr;
  KvTier* tier_ = nullptr;
  int block_size_;
  std::vector<uint8_t> has_hash_;
  std::vector<BlockHash> hash_;
  std::unordered_map<BlockHash, int32_t, BlockHashOf> by_hash_;
  // Intrusive doubly linked LRU over free cached blocks; head is evicted first.
  std::vector<int32_t> prev_, next_;
  int32_t lru_head_ = -1, lru_tail_ = -1;
  int64_t num_free_cached_ = 0;
};

}  // namespace brisk
