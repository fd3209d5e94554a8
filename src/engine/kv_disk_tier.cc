#include "engine/kv_disk_tier.h"

#include <fmt/format.h>

#include <cstring>

namespace brisk {

std::string KvLayoutKey(const KvCacheShape& s) {
  return fmt::format("block{}-layers{}-kvheads{}x{}-{}-pages{}x{}", s.block_size, s.n_layers,
                     s.n_kv_heads, s.head_dim, KvPrecisionName(s.type),
                     s.page_layers > 0 ? s.page_layers : s.n_layers, 1 + s.local_groups);
}

KvDiskTier::KvDiskTier(KvCache* kv, std::unique_ptr<KvDiskStore> store)
    : kv_(kv), store_(std::move(store)) {}

int32_t KvDiskTier::Match(std::span<const BlockHash> hashes) { return store_->Match(hashes); }

void KvDiskTier::Segments(int32_t block, std::span<const int32_t> locals, uint32_t pages) {
  segments_.clear();
  for (uint32_t p = 0; p < pages; ++p) {
    const int32_t page = p == 0 ? block : locals[p - 1];
    for (int slot = 0; slot < kv_->page_slots(); ++slot)
      segments_.push_back(kv_->PageSlot(slot, page));
  }
}

KvTier::Loaded KvDiskTier::Load(const BlockHash& h, int32_t block,
                                std::span<const int32_t> locals) {
  const auto stored = store_->Find(h);
  if (!stored) return Loaded::kNone;
  // Every page asked for when the entry has them, else the block's own.
  const uint32_t all = 1 + static_cast<uint32_t>(locals.size());
  const uint32_t pages = *stored >= all ? all : 1;
  Segments(block, locals, pages);
  if (!store_->Get(h, pages, segments_).ok()) return Loaded::kNone;
  return pages == all ? Loaded::kAll : Loaded::kGlobal;
}

void KvDiskTier::Offer(const BlockHash& h, int32_t block, std::span<const int32_t> locals) {
  const uint32_t pages = 1 + static_cast<uint32_t>(locals.size());
  if (!store_->WantsPut(h, pages)) return;
  Segments(block, locals, pages);
  size_t size = 0;
  for (const auto& s : segments_) size += s.size();
  auto payload = std::make_unique_for_overwrite<uint8_t[]>(size);
  size_t at = 0;
  for (const auto& s : segments_) {
    std::memcpy(payload.get() + at, s.data(), s.size());
    at += s.size();
  }
  store_->Put(h, pages, std::move(payload), size);
}

}  // namespace brisk
