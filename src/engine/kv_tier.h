// A tier of KV blocks under the RAM prefix cache, found by the same block
// hashes (engine/block_hash.h): the disk tier (engine/kv_disk_tier.h). The
// prefix cache offers it each full block when the block is published (its
// K/V just computed) and again when it evicts it, while the K/V are still in
// place; on admission the scheduler asks it for the blocks that follow the
// RAM hit and has it fill freshly allocated blocks with them, before any
// position after them is computed.
//
// The scheduler stays pure logic over this interface (its tests script a
// tier); what a tier does with the bytes, and on which thread, is its own
// business. Every call comes from the engine thread.
#pragma once

#include <cstdint>
#include <span>

#include "engine/block_hash.h"

namespace brisk {

class KvTier {
 public:
  // How much of a block a Load() filled.
  enum class Loaded : uint8_t {
    kNone,    // missing, unreadable or corrupt: compute it
    kGlobal,  // only the block's own page; its local pages hold nothing (the
              // block had left a sliding window when it was stored): drop them
    kAll,     // the block's page and every local page
  };

  // How many of `hashes`, from the first, the tier holds (no I/O).
  virtual int32_t Match(std::span<const BlockHash> hashes) = 0;
  // Fills `block` (allocated) and its local pages `locals` (those wanted:
  // none for a block outside the window being resumed) with the contents `h`.
  virtual Loaded Load(const BlockHash& h, int32_t block, std::span<const int32_t> locals) = 0;
  // Full block `block` holds `h` (just published, or about to be evicted);
  // its K/V and its local pages `locals` (empty once dropped) are intact
  // during the call. The tier may keep a copy.
  virtual void Offer(const BlockHash& h, int32_t block, std::span<const int32_t> locals) = 0;

 protected:
  ~KvTier() = default;
};

}  // namespace brisk
