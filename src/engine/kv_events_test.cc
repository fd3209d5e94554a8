// KV events: vLLM's sha256_cbor hashes against vectors computed with cbor2
// and hashlib (what vLLM itself calls), the event log over a real prefix
// cache, and the msgpack wire format read back with msgpack-cxx.
#include "engine/kv_events.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>
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

TEST(KvEventWireTest, EncodesVllmArrayLikeTaggedStructs) {
  KvEvent stored;
  stored.type = KvEvent::Type::kBlockStored;
  stored.block_hashes = {H(1), H(2)};
  stored.token_ids = {7, 8, 9, 10};
  stored.salts = {"acme", ""};
  KvEvent window = stored;
  window.group = 1;
  window.salts = {"", ""};
  window.parent = H(0);
  KvEvent removed;
  removed.type = KvEvent::Type::kBlockRemoved;
  removed.block_hashes = {H(3)};
  KvEvent cleared;
  cleared.type = KvEvent::Type::kAllBlocksCleared;
  const std::vector<KvEvent> events = {stored, window, removed, cleared};
  KvEventWireOptions wire;
  const std::string bytes = EncodeKvEventBatch(12.5, events, 2, 512, wire);

  msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
  const msgpack::object& batch = oh.get();
  ASSERT_EQ(batch.type, msgpack::type::ARRAY);
  ASSERT_EQ(batch.via.array.size, 3u);
  EXPECT_EQ(batch.via.array.ptr[0].as<double>(), 12.5);
  EXPECT_EQ(batch.via.array.ptr[2].as<int>(), 0);  // data_parallel_rank
  const msgpack::object& evs = batch.via.array.ptr[1];
  ASSERT_EQ(evs.via.array.size, 4u);

  const msgpack::object* s = evs.via.array.ptr[0].via.array.ptr;
  ASSERT_EQ(evs.via.array.ptr[0].via.array.size, 12u);
  EXPECT_EQ(s[0].as<std::string>(), "BlockStored");
  ASSERT_EQ(s[1].via.array.size, 2u);
  EXPECT_EQ(s[1].via.array.ptr[0].type, msgpack::type::BIN);
  EXPECT_EQ(s[1].via.array.ptr[0].via.bin.size, 32u);
  EXPECT_EQ(static_cast<uint8_t>(s[1].via.array.ptr[1].via.bin.ptr[31]), 2);
  EXPECT_TRUE(s[2].is_nil());  // no parent: the chain's first block
  EXPECT_EQ(s[3].as<std::vector<int>>(), (std::vector<int>{7, 8, 9, 10}));
  EXPECT_EQ(s[4].as<int>(), 2);
  EXPECT_TRUE(s[5].is_nil());  // lora_id
  EXPECT_EQ(s[6].as<std::string>(), "CPU");
  EXPECT_TRUE(s[7].is_nil());          // lora_name
  ASSERT_EQ(s[8].via.array.size, 2u);  // extra_keys, one per block
  EXPECT_EQ(s[8].via.array.ptr[0].via.array.ptr[0].as<std::string>(), "acme");
  EXPECT_TRUE(s[8].via.array.ptr[1].is_nil());
  EXPECT_EQ(s[9].as<int>(), 0);
  EXPECT_EQ(s[10].as<std::string>(), "full_attention");
  EXPECT_TRUE(s[11].is_nil());

  const msgpack::object* w = evs.via.array.ptr[1].via.array.ptr;
  EXPECT_EQ(w[2].via.bin.size, 32u);
  EXPECT_TRUE(w[8].is_nil());  // no salt anywhere
  EXPECT_EQ(w[9].as<int>(), 1);
  EXPECT_EQ(w[10].as<std::string>(), "sliding_window");
  EXPECT_EQ(w[11].as<int>(), 512);

  const msgpack::object& r = evs.via.array.ptr[2];
  ASSERT_EQ(r.via.array.size, 4u);
  EXPECT_EQ(r.via.array.ptr[0].as<std::string>(), "BlockRemoved");
  EXPECT_EQ(r.via.array.ptr[2].as<std::string>(), "CPU");
  EXPECT_EQ(r.via.array.ptr[3].as<int>(), 0);

  const msgpack::object& c = evs.via.array.ptr[3];
  ASSERT_EQ(c.via.array.size, 1u);
  EXPECT_EQ(c.via.array.ptr[0].as<std::string>(), "AllBlocksCleared");

  // vLLM's integer form: the low 64 bits, big-endian.
  wire.int_block_hashes = true;
  const std::string ints = EncodeKvEventBatch(0, std::span(events).first(1), 2, 0, wire);
  oh = msgpack::unpack(ints.data(), ints.size());
  EXPECT_EQ(
      oh.get().via.array.ptr[1].via.array.ptr[0].via.array.ptr[1].via.array.ptr[1].as<uint64_t>(),
      2u);
}

}  // namespace
}  // namespace brisk
