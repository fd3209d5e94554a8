#include "gateway/kv_block_index.h"

#include <algorithm>
#include <cassert>
#include <mutex>

namespace brisk::gateway {

KvBlockIndex::KvBlockIndex(int num_replicas, int64_t max_blocks)
    : num_replicas_(num_replicas),
      max_blocks_(std::max<int64_t>(1, max_blocks)),
      per_replica_(static_cast<size_t>(std::max(0, num_replicas)), 0) {
  assert(num_replicas >= 0 && num_replicas <= kMaxReplicas);
}

void KvBlockIndex::Stored(int replica, std::span<const KvBlockKey> blocks) {
  if (replica < 0 || replica >= num_replicas_) return;
  const uint64_t bit = uint64_t{1} << replica;
  std::unique_lock lock(mu_);
  for (KvBlockKey key : blocks) {
    Entry& e = entries_[key];
    if (!(e.replicas & bit)) ++per_replica_[replica];
    e.replicas |= bit;
    e.stamp = ++next_stamp_;
    order_.emplace_back(key, e.stamp);
  }
  EvictOverBound();
  if (order_.size() > 2 * entries_.size() + 1024) CompactOrder();
}

void KvBlockIndex::Removed(int replica, std::span<const KvBlockKey> blocks) {
  if (replica < 0 || replica >= num_replicas_) return;
  const uint64_t bit = uint64_t{1} << replica;
  std::unique_lock lock(mu_);
  for (KvBlockKey key : blocks) {
    auto it = entries_.find(key);
    if (it == entries_.end() || !(it->second.replicas & bit)) continue;
    it->second.replicas &= ~bit;
    --per_replica_[replica];
    if (it->second.replicas == 0) entries_.erase(it);  // its order_ element goes stale
  }
}

void KvBlockIndex::ClearReplica(int replica) {
  if (replica < 0 || replica >= num_replicas_) return;
  const uint64_t bit = uint64_t{1} << replica;
  std::unique_lock lock(mu_);
  if (per_replica_[replica] == 0) return;
  for (auto it = entries_.begin(); it != entries_.end();) {
    it->second.replicas &= ~bit;
    it = it->second.replicas == 0 ? entries_.erase(it) : std::next(it);
  }
  per_replica_[replica] = 0;
}

std::vector<int32_t> KvBlockIndex::MatchPrefix(std::span<const KvBlockKey> blocks) const {
  std::vector<int32_t> matched(static_cast<size_t>(num_replicas_), 0);
  std::shared_lock lock(mu_);
  // Replicas still matching after each block; a chain breaks at its first
  // missing block, so one lookup per block serves every replica.
  uint64_t alive =
      num_replicas_ == kMaxReplicas ? ~uint64_t{0} : (uint64_t{1} << num_replicas_) - 1;
  for (KvBlockKey key : blocks) {
    auto it = entries_.find(key);
    alive &= it == entries_.end() ? 0 : it->second.replicas;
    if (!alive) break;
    for (uint64_t a = alive; a; a &= a - 1) ++matched[static_cast<size_t>(__builtin_ctzll(a))];
  }
  return matched;
}

void KvBlockIndex::EvictOverBound() {
  while (static_cast<int64_t>(entries_.size()) > max_blocks_ && !order_.empty()) {
    auto [key, stamp] = order_.front();
    order_.pop_front();
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.stamp != stamp) continue;  // stale
    for (uint64_t a = it->second.replicas; a; a &= a - 1)
      --per_replica_[static_cast<size_t>(__builtin_ctzll(a))];
    entries_.erase(it);
    ++evicted_;
  }
}

void KvBlockIndex::CompactOrder() {
  std::deque<std::pair<KvBlockKey, uint64_t>> live;
  for (const auto& [key, stamp] : order_) {
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.stamp == stamp) live.emplace_back(key, stamp);
  }
  order_.swap(live);
}

int64_t KvBlockIndex::num_blocks() const {
  std::shared_lock lock(mu_);
  return static_cast<int64_t>(entries_.size());
}

int64_t KvBlockIndex::replica_blocks(int replica) const {
  if (replica < 0 || replica >= num_replicas_) return 0;
  std::shared_lock lock(mu_);
  return per_replica_[replica];
}

int64_t KvBlockIndex::evicted() const {
  std::shared_lock lock(mu_);
  return evicted_;
}

int64_t KvBlockIndex::bytes() const {
  std::shared_lock lock(mu_);
  // A node of the hash map (key, entry, next pointer, cached hash), a bucket
  // pointer, and an order element per key.
  constexpr int64_t kNode = sizeof(KvBlockKey) + sizeof(Entry) + 2 * sizeof(void*);
  return static_cast<int64_t>(entries_.size()) * kNode +
         static_cast<int64_t>(entries_.bucket_count()) * static_cast<int64_t>(sizeof(void*)) +
         static_cast<int64_t>(order_.size()) *
             static_cast<int64_t>(sizeof(std::pair<KvBlockKey, uint64_t>));
}

}  // namespace brisk::gateway
