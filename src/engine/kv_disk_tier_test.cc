// The disk tier over a real KV cache (no model): a block's pages go out to
// disk and come back byte for byte into other pages, with or without its
// local pages (sliding-window paging).
#include "engine/kv_disk_tier.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

namespace brisk {
namespace {

namespace fs = std::filesystem;

// Gemma-3-like paging: 2 global layers per page, 2 local groups.
KvCacheShape WindowShape() {
  KvCacheShape s;
  s.n_layers = 6;
  s.n_kv_heads = 1;
  s.head_dim = 32;
  s.block_size = 4;
  s.page_layers = 2;
  s.local_groups = 2;
  s.layer_group = {1, 1, 0, 2, 2, 0};
  s.layer_slot = {0, 1, 0, 0, 1, 1};
  return s;
}

void Fill(KvCache& kv, int32_t page, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int slot = 0; slot < kv.page_slots(); ++slot)
    for (uint8_t& b : kv.PageSlot(slot, page)) b = static_cast<uint8_t>(rng());
}

bool SameBytes(const KvCache& kv, int32_t a, int32_t b) {
  for (int slot = 0; slot < kv.page_slots(); ++slot) {
    const auto x = kv.PageSlot(slot, a), y = kv.PageSlot(slot, b);
    if (!std::equal(x.begin(), x.end(), y.begin())) return false;
  }
  return true;
}

class KvDiskTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("brisk-kv-tier-{}", ::getpid());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<KvDiskTier> Tier(KvCache* kv) {
    KvDiskStoreOptions o;
    o.dir = dir_.string();
    o.serving_key = "test|" + KvLayoutKey(kv->shape());
    auto store = KvDiskStore::Open(o);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return std::make_unique<KvDiskTier>(kv, std::move(*store));
  }

  fs::path dir_;
};

TEST_F(KvDiskTierTest, ABlockComesBackByteForByteWithItsLocalPages) {
  KvCache kv(WindowShape(), 16);
  auto tier = Tier(&kv);
  const BlockHash h = RootBlockHash("a"), g = RootBlockHash("b");
  for (int32_t p : {0, 1, 2, 3}) Fill(kv, p, static_cast<uint32_t>(p + 1));
  const int32_t locals[] = {1, 2};
  tier->Offer(h, 0, locals);  // block 0 with local pages 1, 2
  tier->Offer(g, 3, {});      // block 3 that had left the window
  tier->store().Flush();
  const BlockHash chain[] = {h, g, RootBlockHash("c")};
  EXPECT_EQ(tier->Match(chain), 2);

  const int32_t into[] = {9, 10};
  EXPECT_EQ(tier->Load(h, 8, into), KvTier::Loaded::kAll);
  EXPECT_TRUE(SameBytes(kv, 0, 8));
  EXPECT_TRUE(SameBytes(kv, 1, 9));
  EXPECT_TRUE(SameBytes(kv, 2, 10));
  const int32_t into2[] = {12, 13};
  EXPECT_EQ(tier->Load(g, 11, into2), KvTier::Loaded::kGlobal);
  EXPECT_TRUE(SameBytes(kv, 3, 11));
  EXPECT_EQ(tier->Load(RootBlockHash("c"), 14, into2), KvTier::Loaded::kNone);
  // Only the block's own page of an entry that has more (a block outside
  // the window being resumed).
  Fill(kv, 15, 99);
  EXPECT_EQ(tier->Load(h, 15, {}), KvTier::Loaded::kAll);
  EXPECT_TRUE(SameBytes(kv, 0, 15));
  // The same block offered again is not written again; with more pages it
  // replaces the entry.
  tier->Offer(g, 3, {});
  tier->Offer(g, 3, locals);
  tier->store().Flush();
  EXPECT_EQ(tier->store().stats().writes, 3);
  EXPECT_EQ(tier->Load(g, 11, into2), KvTier::Loaded::kAll);
  const int64_t page_bytes = kv.shape().BytesPerPage();
  EXPECT_EQ(tier->store().stats().bytes_read, (3 + 1 + 1 + 3) * page_bytes);
}

TEST_F(KvDiskTierTest, TheLayoutIsPartOfTheKey) {
  KvCacheShape a = WindowShape(), b = WindowShape();
  b.type = KvType::kInt8;
  EXPECT_NE(KvLayoutKey(a), KvLayoutKey(b));
  b = a;
  b.block_size = 8;
  EXPECT_NE(KvLayoutKey(a), KvLayoutKey(b));
  KvCache kv(a, 4);
  auto t1 = Tier(&kv);
  KvCache kv8(b, 4);
  auto t2 = Tier(&kv8);
  EXPECT_NE(t1->store().key_dir(), t2->store().key_dir());
}

}  // namespace
}  // namespace brisk
