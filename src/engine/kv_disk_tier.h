// The disk tier under the RAM prefix cache (engine/kv_tier.h over
// engine/kv_disk_store.h).
//
// Writes: a block is copied out of the KV pool (a memcpy on the engine
// thread, ~0.1 ms for a SmolLM2 block against ~10 ms to compute its 16
// tokens) and handed to the store's writer thread when the prefix cache
// publishes it, and again when it evicts it if the first copy was dropped
// (the store skips what it already holds). Writing at publish time, not only
// at eviction, is what makes a restart find whole chains: a block every
// conversation shares (a system prompt) is never evicted, and a chain with
// its first block missing is no hit at all.
//
// Reads: a block found on disk on admission is read straight into the pool's
// pages of a freshly allocated block (one preadv per block, then its page
// checksums), synchronously on the engine thread, before the step that
// computes the positions after it is built. Reading in the step keeps the
// scheduler's rule simple (a block counted as computed holds its K/V); what
// it costs is measured in BENCHMARKS.md (KV disk tier): ~0.1 ms a SmolLM2
// block from the page cache, against ~1.5 ms of prefill per token.
//
// An entry is a block's pages: its own page, then its local pages in order
// (sliding-window models), each page every layer slot in order
// (KvCache::PageSlot). A block that left a sliding window before it was
// offered has only its own page: it is stored so, and restored without local
// pages, which the scheduler's window rule (a hit is used only as far as the
// local layers still hold the window before it) already handles. A block
// outside the window being resumed is read without its local pages even when
// the entry has them (per-page checksums make the partial read safe). An
// entry with local pages replaces one without (KvDiskStore keeps the larger).
#pragma once

#include <memory>
#include <vector>

#include "engine/kv_disk_store.h"
#include "engine/kv_tier.h"
#include "model/kv_cache.h"

namespace brisk {

class KvDiskTier final : public KvTier {
 public:
  // `kv` must outlive the tier.
  KvDiskTier(KvCache* kv, std::unique_ptr<KvDiskStore> store);

  int32_t Match(std::span<const BlockHash> hashes) override;
  Loaded Load(const BlockHash& h, int32_t block, std::span<const int32_t> locals) override;
  void Offer(const BlockHash& h, int32_t block, std::span<const int32_t> locals) override;

  KvDiskStore& store() { return *store_; }
  const KvDiskStore& store() const { return *store_; }

 private:
  // Every slot of each page in order: where a payload of those pages goes.
  void Segments(int32_t block, std::span<const int32_t> locals, uint32_t pages);

  KvCache* kv_;
  std::unique_ptr<KvDiskStore> store_;
  std::vector<std::span<uint8_t>> segments_;  // scratch
};

// The directory name part of a KV disk tier's serving key that only the
// engine knows: the KV layout (block size, layers, KV width, precision,
// layer paging). Appended to the caller's key (model file, precisions, RoPE,
// engine version).
std::string KvLayoutKey(const KvCacheShape& shape);

}  // namespace brisk
