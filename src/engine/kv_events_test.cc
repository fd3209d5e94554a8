// KV events: vLLM's sha256_cbor hashes against vectors computed with cbor2
// and hashlib (what vLLM itself calls) and the event log over a real prefix
// cache (the wire format: kvwire/kv_event_wire_test.cc).
#include "engine/kv_events.h"

#include <gtest/gtest.h>

#include <numeric>

#include "engine/kv_block_pool.h"
#include "engine/prefix_cache.h"

namespace brisk {
namespace {

std::string Hex(const ExternalBlockHash& h) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : h) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

std::vector<int32_t> Iota(int first, int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

// python3 -c "import cbor2, hashlib; h = lambda o: hashlib.sha256(
//   cbor2.dumps(o, canonical=True)).digest(); ..."
TEST(ExternalBlockHasherTest, MatchesVllmSha256Cbor) {
  const ExternalBlockHasher hasher("0");
  EXPECT_EQ(Hex(hasher.none_hash()),  // h('0')
            "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e");
  EXPECT_EQ(Hex(ExternalBlockHasher("42").none_hash()),
            "9fa6eb003f14425eb9c8e6baacfbcaab26257357b829c7bfa74ffcc4f31c1780");
  // h((none, tuple(range(1, 17)), None))
  const ExternalBlockHash b1 = hasher.Chain(hasher.none_hash(), Iota(1, 16), "");
  EXPECT_EQ(Hex(b1), "202da172482d928bbc42ab25b0151e2b895f13f41002e27b2ceabcfae6d332ea");
  // Every CBOR integer width: h((b1, (300, 70000, 0, 23, 24, 255, 256, 65535,
  // 65536, 5, 5, 5, 5, 5, 5, 5), None))
  std::vector<int32_t> t2 = {300, 70000, 0, 23, 24, 255, 256, 65535, 65536, 5, 5, 5, 5, 5, 5, 5};
  EXPECT_EQ(Hex(hasher.Chain(b1, t2, "")),
            "64288b6d4c18c2ca40ae22d8bc738d98e8db02fc0be8436da4b02aa9180d6e70");
  // A cache salt is the first block's extra keys: h((none, t1, ('acme',)))
  EXPECT_EQ(Hex(hasher.Chain(hasher.none_hash(), Iota(1, 16), "acme")),
            "879e7603f28234fa05b7ea46262d2880dc344dafa746e6539a685daa7fe5035a");
}

ExternalBlockHash H(uint8_t n) {
  ExternalBlockHash h{};
  h[31] = n;
  return h;
}

TEST(KvEventLogTest, OneChainMergesIntoOneStoredEvent) {
  KvEventLog log(8, 2, 0);
  log.Stored(0, H(1), nullptr, std::vector<int32_t>{1, 2}, "t", false);
  const ExternalBlockHash h1 = H(1);
  log.Stored(1, H(2), &h1, std::vector<int32_t>{3, 4}, "", false);
  const ExternalBlockHash other = H(9);
  log.Stored(2, H(3), &other, std::vector<int32_t>{5, 6}, "", false);  // another chain
  auto ev = log.Take();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].type, KvEvent::Type::kBlockStored);
  EXPECT_EQ(ev[0].block_hashes, (std::vector<ExternalBlockHash>{H(1), H(2)}));
  EXPECT_FALSE(ev[0].parent.has_value());
  EXPECT_EQ(ev[0].token_ids, (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(ev[0].salts, (std::vector<std::string>{"t", ""}));
  ASSERT_TRUE(ev[1].parent.has_value());
  EXPECT_EQ(*ev[1].parent, other);
  EXPECT_TRUE(log.Take().empty());
}

TEST(KvEventLogTest, SlidingWindowGroupHoldsABlockWhileItsLocalsLast) {
  KvEventLog log(8, 2, 4);
  log.Stored(0, H(1), nullptr, std::vector<int32_t>{1, 2}, "", true);
  const ExternalBlockHash h1 = H(1);
  log.Stored(1, H(2), &h1, std::vector<int32_t>{3, 4}, "", true);
  auto ev = log.Take();
  ASSERT_EQ(ev.size(), 2u);  // group 0 and group 1, each one chain
  EXPECT_EQ(ev[0].group, 0);
  EXPECT_EQ(ev[1].group, 1);
  EXPECT_EQ(ev[1].block_hashes.size(), 2u);
  log.LocalsDropped(0);
  log.LocalsDropped(0);  // once only
  log.Forgotten(0);      // group 0 only now
  log.Forgotten(1);      // both groups
  ev = log.Take();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].type, KvEvent::Type::kBlockRemoved);
  EXPECT_EQ(ev[0].group, 1);
  EXPECT_EQ(ev[0].block_hashes, (std::vector<ExternalBlockHash>{H(1)}));
  EXPECT_EQ(ev[1].group, 0);
  EXPECT_EQ(ev[1].block_hashes, (std::vector<ExternalBlockHash>{H(1), H(2)}));
  EXPECT_EQ(ev[2].group, 1);
  EXPECT_EQ(ev[2].block_hashes, (std::vector<ExternalBlockHash>{H(2)}));
}

TEST(KvEventLogTest, PrefixCacheEvictionAndClearBecomeEvents) {
  KvBlockPool pool(2);
  PrefixCache cache(&pool, 2);
  KvEventLog log(2, 2, 0);
  cache.set_listener(&log);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(pool.Allocate(2, &blocks));
  ASSERT_TRUE(cache.Publish(blocks[0], RootBlockHash("a")));
  log.Stored(blocks[0], H(1), nullptr, std::vector<int32_t>{1, 2}, "", false);
  EXPECT_FALSE(cache.Publish(blocks[1], RootBlockHash("a")));  // held by another block
  pool.ReleaseTable(blocks);
  log.Take();
  std::vector<int32_t> again;
  ASSERT_TRUE(pool.Allocate(2, &again));  // takes the kept block back: evicted
  auto ev = log.Take();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, KvEvent::Type::kBlockRemoved);
  EXPECT_EQ(ev[0].block_hashes, (std::vector<ExternalBlockHash>{H(1)}));
  log.Stored(again[0], H(5), nullptr, std::vector<int32_t>{1, 2}, "", false);
  cache.Clear();
  ev = log.Take();
  ASSERT_EQ(ev.size(), 1u);  // what came before a clear is moot
  EXPECT_EQ(ev[0].type, KvEvent::Type::kAllBlocksCleared);
  cache.set_listener(nullptr);
}

}  // namespace
}  // namespace brisk
