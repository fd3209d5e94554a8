// The KV event wire format: what the encoder writes, read back with
// msgpack-cxx field by field (vLLM's layout), and the decoder on its own
// output, on vLLM's older shorter events and on garbage.
#include "kvwire/kv_event_wire.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>
#include <random>

namespace brisk {
namespace {

ExternalBlockHash H(uint8_t n) {
  ExternalBlockHash h{};
  h[31] = n;
  return h;
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

TEST(KvEventWireTest, BlockKeyIsTheLow64BitsBigEndian) {
  ExternalBlockHash h{};
  for (int i = 0; i < 32; ++i) h[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(BlockKeyOf(h), 0x18191a1b1c1d1e1full);
}

TEST(KvEventWireTest, SequenceFrameIsEightBytesBigEndianSigned) {
  EXPECT_EQ(EncodeKvEventSeq(0x0102), std::string("\0\0\0\0\0\0\x01\x02", 8));
  EXPECT_EQ(EncodeKvEventSeq(-1), std::string(8, '\xff'));
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{1} << 40})
    EXPECT_EQ(DecodeKvEventSeq(EncodeKvEventSeq(v)), v);
  EXPECT_FALSE(DecodeKvEventSeq("1234567").has_value());
  EXPECT_FALSE(DecodeKvEventSeq("123456789").has_value());
}

TEST(KvEventWireTest, DecodesWhatItEncodes) {
  KvEvent stored;
  stored.type = KvEvent::Type::kBlockStored;
  stored.block_hashes = {H(1), H(2)};
  stored.parent = H(9);
  stored.token_ids = {1, 2, 3, 4};
  stored.salts = {"", ""};
  stored.group = 1;
  KvEvent removed;
  removed.type = KvEvent::Type::kBlockRemoved;
  removed.block_hashes = {H(3), H(4)};
  KvEvent cleared;
  cleared.type = KvEvent::Type::kAllBlocksCleared;
  const std::vector<KvEvent> events = {cleared, stored, removed};
  for (bool ints : {false, true}) {
    KvEventWireOptions wire;
    wire.int_block_hashes = ints;
    wire.data_parallel_rank = 3;
    auto d = DecodeKvEventBatch(EncodeKvEventBatch(7.25, events, 2, 128, wire));
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_EQ(d->ts, 7.25);
    EXPECT_EQ(d->data_parallel_rank, 3);
    ASSERT_EQ(d->events.size(), 3u);
    EXPECT_EQ(d->events[0].type, KvEvent::Type::kAllBlocksCleared);
    const DecodedKvEvent& s = d->events[1];
    EXPECT_EQ(s.type, KvEvent::Type::kBlockStored);
    EXPECT_EQ(s.blocks, (std::vector<KvBlockKey>{1, 2}));
    ASSERT_TRUE(s.parent.has_value());
    EXPECT_EQ(*s.parent, 9u);
    EXPECT_EQ(s.num_tokens, 4);
    EXPECT_EQ(s.block_size, 2);
    EXPECT_EQ(s.medium, "CPU");
    EXPECT_EQ(s.group, 1);
    const DecodedKvEvent& r = d->events[2];
    EXPECT_EQ(r.type, KvEvent::Type::kBlockRemoved);
    EXPECT_EQ(r.blocks, (std::vector<KvBlockKey>{3, 4}));
    EXPECT_EQ(r.group, 0);
  }
}

// vLLM before the hybrid allocator's fields: BlockStored [tag, hashes, parent,
// token_ids, block_size, lora_id, medium], BlockRemoved [tag, hashes, medium],
// and an event type this reader does not know.
TEST(KvEventWireTest, DecodesOlderShorterEventsAndSkipsUnknownTypes) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(&buf);
  pk.pack_array(3);
  pk.pack_double(1.0);
  pk.pack_array(3);
  pk.pack_array(7);
  pk.pack(std::string("BlockStored"));
  pk.pack_array(1);
  pk.pack_uint64(0xfeedull);
  pk.pack_nil();
  pk.pack(std::vector<int>{5, 6});
  pk.pack(2);
  pk.pack_nil();
  pk.pack(std::string("GPU"));
  pk.pack_array(2);
  pk.pack(std::string("SomethingNew"));
  pk.pack(1);
  pk.pack_array(3);
  pk.pack(std::string("BlockRemoved"));
  pk.pack_array(1);
  pk.pack_uint64(0xfeedull);
  pk.pack(std::string("GPU"));
  pk.pack_nil();
  auto d = DecodeKvEventBatch(std::string_view(buf.data(), buf.size()));
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->events.size(), 2u);
  EXPECT_EQ(d->events[0].blocks, (std::vector<KvBlockKey>{0xfeed}));
  EXPECT_EQ(d->events[0].medium, "GPU");
  EXPECT_EQ(d->events[0].group, 0);
  EXPECT_EQ(d->events[1].type, KvEvent::Type::kBlockRemoved);
  EXPECT_EQ(d->data_parallel_rank, 0);
}

TEST(KvEventWireTest, GarbageIsAnErrorNotACrash) {
  for (std::string_view bad :
       {std::string_view(""), std::string_view("\xc1"), std::string_view("\x93\xcb"),
        std::string_view("hello"), std::string_view("\x92\x01\x02")}) {
    EXPECT_FALSE(DecodeKvEventBatch(bad).ok()) << bad.size();
  }
  // An array that claims 4 billion elements in 5 bytes.
  EXPECT_FALSE(DecodeKvEventBatch(std::string_view("\xdd\xff\xff\xff\xff", 5)).ok());
  // Every truncation and random byte flips of a real batch.
  KvEvent stored;
  stored.block_hashes = {H(1)};
  stored.token_ids = {1, 2};
  stored.salts = {"t"};
  const std::string good = EncodeKvEventBatch(1, std::span(&stored, 1), 2, 0, {});
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeKvEventBatch(std::string_view(good).substr(0, n)).ok()) << n;
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string b = good;
    b[rng() % b.size()] = static_cast<char>(rng());
    (void)DecodeKvEventBatch(b);  // either answer; never a crash
  }
}

}  // namespace
}  // namespace brisk
