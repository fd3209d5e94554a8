// Which replicas of a tier hold which KV blocks, as their engines' KV events
// say (kvwire/kv_event_wire.h): block key -> the set of replicas, so that the
// gateway can send a prompt to the replica that holds the longest run of its
// blocks (precise prefix routing).
//
// Keys are the low 64 bits of vLLM's chained block hashes; a chained hash
// names its whole prefix, so a replica's cached prefix of a prompt is the
// run of the prompt's block keys, from the first, that it holds.
//
// Bounded: at most `max_blocks` keys; past that the key stored longest ago
// goes first (a key stored again counts as new). A replica's view is cleared
// when its engine restarts or its event stream is re-learnt
// (gateway/kv_event_subscriber.h). Thread-safe: the subscriber writes,
// request threads read.
#pragma once

#include <cstdint>
#include <deque>
#include <shared_mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "kvwire/kv_event_wire.h"

namespace brisk::gateway {

class KvBlockIndex {
 public:
  static constexpr int kMaxReplicas = 64;  // one bit each

  KvBlockIndex(int num_replicas, int64_t max_blocks);

  void Stored(int replica, std::span<const KvBlockKey> blocks);
  void Removed(int replica, std::span<const KvBlockKey> blocks);
  void ClearReplica(int replica);

  // Per replica, how many of `blocks`, from the first, it holds.
  std::vector<int32_t> MatchPrefix(std::span<const KvBlockKey> blocks) const;

  int num_replicas() const { return num_replicas_; }
  int64_t num_blocks() const;  // keys held (by any replica)
  int64_t replica_blocks(int replica) const;
  int64_t evicted() const;  // keys dropped for the bound
  // Memory the index takes now, approximately (keys, sets, order, buckets).
  int64_t bytes() const;

 private:
  struct Entry {
    uint64_t replicas = 0;  // bit r: replica r holds the block
    uint64_t stamp = 0;     // when the key was last stored (order_)
  };
  void EvictOverBound();
  void CompactOrder();

  const int num_replicas_;
  const int64_t max_blocks_;
  mutable std::shared_mutex mu_;
  std::unordered_map<KvBlockKey, Entry> entries_;
  // (key, stamp) in store order; an element whose stamp is not its key's
  // current one is stale and skipped.
  std::deque<std::pair<KvBlockKey, uint64_t>> order_;
  uint64_t next_stamp_ = 0;
  std::vector<int64_t> per_replica_;
  int64_t evicted_ = 0;
};

}  // namespace brisk::gateway
