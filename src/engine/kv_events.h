// KV events: what the prefix cache holds, told to the fleet in vLLM's terms,
// so that routers built for vLLM (llm-d's KV-cache indexer, Dynamo's KV
// router, `brisk gateway`) can route to a Brisk engine by the prefixes it
// holds.
//
// Block hashes are vLLM's `sha256_cbor` ones, not the prefix cache's own
// XXH3 hashes (prefix_cache.h): SHA-256 of the canonical CBOR encoding of
// [parent hash, [token ids], extra keys], the first block's parent being
// SHA-256 of the CBOR text of the hash seed (vLLM's PYTHONHASHSEED) and its
// extra keys [cache salt] when the request has one (null otherwise). An
// indexer that hashes a prompt's tokens the same way gets the same keys.
//
// The log records events as the scheduler changes the cache: a block
// published (BlockStored), a block forgotten (evicted: BlockRemoved), the
// cache cleared (AllBlocksCleared). Sliding-window models report two groups
// as vLLM's hybrid allocator does: group 0 (full attention) holds a block
// while it is cached, group 1 (sliding window) only while the block still
// has its local layers' pages. Consecutive stores of one chain, and
// consecutive removals, merge into one event.
//
// The engine thread owns the log; EncodeKvEventBatch (kvwire/kv_event_wire.h)
// turns a step's events into the msgpack payload of one message
// (kv_event_publisher.h sends it).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/prefix_cache.h"
#include "kvwire/kv_event_wire.h"

namespace brisk {

// vLLM's sha256_cbor block hashes.
class ExternalBlockHasher {
 public:
  explicit ExternalBlockHasher(std::string_view hash_seed);
  // The first block's parent (vLLM's NONE_HASH).
  const ExternalBlockHash& none_hash() const { return none_hash_; }
  // The hash of a full block under `parent` (none_hash() for the first);
  // `salt` non-empty makes the block's extra keys [salt] (first blocks only).
  ExternalBlockHash Chain(const ExternalBlockHash& parent, std::span<const int32_t> tokens,
                          std::string_view salt) const;

 private:
  ExternalBlockHash none_hash_;
};

class KvEventLog final : public PrefixCache::Listener {
 public:
  // `sliding_window` > 0: the model has local layers (group 1).
  KvEventLog(int64_t num_blocks, int block_size, int sliding_window);

  // `block` now holds `hash` (its parent's hash, null for a first block);
  // `in_window`: its local pages are still held (group 1 holds it too).
  void Stored(int32_t block, const ExternalBlockHash& hash, const ExternalBlockHash* parent,
              std::span<const int32_t> tokens, std::string_view salt, bool in_window);
  // The cache forgot `block` (evicted or cleared): removed from each group
  // that held it.
  void Forgotten(int32_t block) override;
  // `block` left the sliding window (its local pages went back to the pool).
  void LocalsDropped(int32_t block);
  void Cleared() override;

  int block_size() const { return block_size_; }
  int sliding_window() const { return sliding_window_; }
  bool empty() const { return events_.empty(); }
  // The events since the last Take, in order.
  std::vector<KvEvent> Take();

 private:
  void Removed(const ExternalBlockHash& hash, int group);

  int block_size_;
  int sliding_window_;
  std::vector<ExternalBlockHash> hash_;
  std::vector<uint8_t> groups_;  // bit g: group g holds the block
  std::vector<KvEvent> events_;
};

}  // namespace brisk
