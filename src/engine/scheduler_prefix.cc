// The scheduler's part in prefix caching (scheduler.h): on admission a
// sequence takes the longest run of its blocks the prefix cache holds, then
// those a tier under it (the disk tier) holds; as its K/V are computed, its
// full blocks are published to the cache.
#include <algorithm>

#include "engine/scheduler.h"

namespace brisk {

// A fresh or preempted sequence reuses the longest run of cached full blocks.
// At least one token is left to compute: its logits are needed.
void Scheduler::AdmitFromPrefixCache(SeqState& s) {
  const bool first = s.num_cached_prompt < 0;
  if (!opts_.prefix_cache || !s.blocks.empty()) {
    if (first) s.num_cached_prompt = 0;
    return;
  }
  prefix_cache_.HashFullBlocks(s.salt, s.tokens, &s.block_hashes);
  const size_t max_hits =
      std::min(static_cast<size_t>((s.num_tokens() - 1) / opts_.block_size), s.block_hashes.size());
  const int32_t ram_hits = prefix_cache_.AcquirePrefix(
      std::span<const BlockHash>(s.block_hashes).first(max_hits), &s.blocks);
  int32_t hits = ram_hits;
  if (tier_ && static_cast<size_t>(hits) < max_hits)
    hits += LoadFromTier(s, static_cast<size_t>(hits), max_hits);
  if (WindowPaging()) {  // the local layers need the window before the first computed token
    const int32_t usable = WindowedHits(s, hits);
    pool_->ReleaseTable(std::span<const int32_t>(s.blocks).subspan(static_cast<size_t>(usable)));
    s.blocks.resize(static_cast<size_t>(usable));
    hits = usable;
  }
  const int32_t from_ram = std::min(ram_hits, hits);
  prefix_ram_hit_blocks_ += from_ram;
  prefix_disk_hit_blocks_ += hits - from_ram;
  s.num_computed = hits * opts_.block_size;
  s.num_published = hits;
  if (first) {
    s.num_cached_prompt = std::min(s.num_computed, s.num_prompt);
    prefix_query_tokens_ += s.num_prompt;
    prefix_hit_tokens_ += s.num_cached_prompt;
    prefix_disk_hit_tokens_ += std::max(0, s.num_cached_prompt - from_ram * opts_.block_size);
  }
}

// Blocks [from, to) of `s` that the tier holds, from the first, are read into
// newly allocated blocks and published, one block at a time. With window
// paging, a block before the window of the furthest resume point reads only
// its own page (its local pages go back at once), so the pages held never
// pass what computing the same positions would hold. Only free blocks are
// taken: no one is preempted for a tier hit. Returns how many were read.
int32_t Scheduler::LoadFromTier(SeqState& s, size_t from, size_t to) {
  const auto hashes = std::span<const BlockHash>(s.block_hashes).subspan(from, to - from);
  const int32_t held = tier_->Match(hashes);
  const int64_t resume = (static_cast<int64_t>(from) + held) * opts_.block_size;
  const int64_t first_in_window =
      WindowPaging() ? std::max<int64_t>(0, resume - opts_.sliding_window + 1) / opts_.block_size
                     : 0;
  std::vector<int32_t> got;
  int32_t n = 0;
  for (; n < held; ++n) {
    got.clear();
    if (!pool_->Allocate(1, &got)) break;
    const int32_t b = got[0];
    if (static_cast<int64_t>(from) + n < first_in_window) pool_->DropLocals(b);
    const KvTier::Loaded loaded = tier_->Load(hashes[n], b, pool_->Locals(b));
    if (loaded == KvTier::Loaded::kNone) {
      pool_->Release(got);
      break;
    }
    if (loaded == KvTier::Loaded::kGlobal) pool_->DropLocals(b);
    s.blocks.push_back(b);
    if (prefix_cache_.Publish(b, hashes[n]) && events_)
      RecordStored(s, static_cast<int32_t>(from) + n);
  }
  return n;
}

void Scheduler::SetKvTier(KvTier* tier) {
  tier_ = tier;
  prefix_cache_.set_tier(tier);
}

void Scheduler::PublishComputed(SeqState& s) {
  if (!opts_.prefix_cache) return;
  prefix_cache_.HashFullBlocks(s.salt, s.tokens, &s.block_hashes);
  const int32_t full =
      std::min<int32_t>(s.num_computed / opts_.block_size, static_cast<int32_t>(s.blocks.size()));
  for (int32_t i = s.num_published; i < full; ++i) {
    if (prefix_cache_.Publish(s.blocks[i], s.block_hashes[i]) && events_) RecordStored(s, i);
  }
  s.num_published = std::max(s.num_published, full);
}

void Scheduler::EnableKvEvents(KvEventLog* log, const ExternalBlockHasher* hasher) {
  events_ = log;
  external_hasher_ = hasher;
  prefix_cache_.set_listener(log);
}

// Block i of `s` was just published: a BlockStored with vLLM's hash of it.
void Scheduler::RecordStored(SeqState& s, int32_t i) {
  const size_t bs = static_cast<size_t>(opts_.block_size);
  const std::span<const int32_t> tokens(s.tokens);
  while (s.external_hashes.size() <= static_cast<size_t>(i)) {
    const size_t k = s.external_hashes.size();
    const ExternalBlockHash& parent =
        k == 0 ? external_hasher_->none_hash() : s.external_hashes[k - 1];
    s.external_hashes.push_back(external_hasher_->Chain(
        parent, tokens.subspan(k * bs, bs), k == 0 ? std::string_view(s.salt_text) : ""));
  }
  const int32_t b = s.blocks[i];
  events_->Stored(b, s.external_hashes[i], i == 0 ? nullptr : &s.external_hashes[i - 1],
                  tokens.subspan(i * bs, bs), i == 0 ? std::string_view(s.salt_text) : "",
                  !pool_->Locals(b).empty());
}

}  // namespace brisk
