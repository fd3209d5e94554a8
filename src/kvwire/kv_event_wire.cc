#include "kvwire/kv_event_wire.h"

#include <exception>
#include <msgpack.hpp>

namespace brisk {

KvBlockKey BlockKeyOf(const ExternalBlockHash& h) {
  KvBlockKey v = 0;
  for (size_t i = h.size() - 8; i < h.size(); ++i) v = (v << 8) | h[i];
  return v;
}

std::string EncodeKvEventSeq(int64_t seq) {
  std::string b(8, '\0');
  const auto u = static_cast<uint64_t>(seq);
  for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = static_cast<char>(u >> (56 - 8 * i));
  return b;
}

std::optional<int64_t> DecodeKvEventSeq(std::string_view frame) {
  if (frame.size() != 8) return std::nullopt;
  uint64_t v = 0;
  for (char c : frame) v = (v << 8) | static_cast<uint8_t>(c);
  return static_cast<int64_t>(v);
}

// ---- encoding ----------------------------------------------------------------

namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void PackStr(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

void PackHash(Packer& pk, const ExternalBlockHash& h, bool as_int) {
  if (as_int) {
    pk.pack_uint64(BlockKeyOf(h));
  } else {
    pk.pack_bin(static_cast<uint32_t>(h.size()));
    pk.pack_bin_body(reinterpret_cast<const char*>(h.data()), static_cast<uint32_t>(h.size()));
  }
}

void PackHashes(Packer& pk, const std::vector<ExternalBlockHash>& hs, bool as_int) {
  pk.pack_array(static_cast<uint32_t>(hs.size()));
  for (const auto& h : hs) PackHash(pk, h, as_int);
}

}  // namespace

std::string EncodeKvEventBatch(double ts, std::span<const KvEvent> events, int block_size,
                               int sliding_window, const KvEventWireOptions& wire) {
  msgpack::sbuffer buf;
  Packer pk(&buf);
  pk.pack_array(3);
  pk.pack_double(ts);
  pk.pack_array(static_cast<uint32_t>(events.size()));
  const bool as_int = wire.int_block_hashes;
  for (const KvEvent& e : events) {
    switch (e.type) {
      case KvEvent::Type::kBlockStored: {
        // [tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id,
        //  medium, lora_name, extra_keys, group_idx, kv_cache_spec_kind,
        //  kv_cache_spec_sliding_window]
        pk.pack_array(12);
        PackStr(pk, "BlockStored");
        PackHashes(pk, e.block_hashes, as_int);
        if (e.parent)
          PackHash(pk, *e.parent, as_int);
        else
          pk.pack_nil();
        pk.pack_array(static_cast<uint32_t>(e.token_ids.size()));
        for (int32_t t : e.token_ids) pk.pack_uint32(static_cast<uint32_t>(t));
        pk.pack_int32(block_size);
        pk.pack_nil();  // lora_id
        PackStr(pk, wire.medium);
        pk.pack_nil();  // lora_name
        bool salted = false;
        for (const auto& s : e.salts) salted |= !s.empty();
        if (!salted) {
          pk.pack_nil();
        } else {
          pk.pack_array(static_cast<uint32_t>(e.salts.size()));
          for (const auto& s : e.salts) {
            if (s.empty()) {
              pk.pack_nil();
            } else {
              pk.pack_array(1);
              PackStr(pk, s);
            }
          }
        }
        pk.pack_int32(e.group);
        PackStr(pk, e.group == 1 ? "sliding_window" : "full_attention");
        if (e.group == 1)
          pk.pack_int32(sliding_window);
        else
          pk.pack_nil();
        break;
      }
      case KvEvent::Type::kBlockRemoved:
        // [tag, block_hashes, medium, group_idx]
        pk.pack_array(4);
        PackStr(pk, "BlockRemoved");
        PackHashes(pk, e.block_hashes, as_int);
        PackStr(pk, wire.medium);
        pk.pack_int32(e.group);
        break;
      case KvEvent::Type::kAllBlocksCleared:
        pk.pack_array(1);
        PackStr(pk, "AllBlocksCleared");
        break;
    }
  }
  pk.pack_int32(wire.data_parallel_rank);
  return std::string(buf.data(), buf.size());
}

// ---- decoding ----------------------------------------------------------------

namespace {

using Obj = msgpack::object;

// Decoding errors inside one payload: thrown here, caught once in
// DecodeKvEventBatch and turned into a Status.
struct WireError {
  std::string what;
};

const Obj& At(const Obj& array, uint32_t i) { return array.via.array.ptr[i]; }

uint32_t ArraySize(const Obj& o, const char* what) {
  if (o.type != msgpack::type::ARRAY) throw WireError{std::string(what) + " is not an array"};
  return o.via.array.size;
}

std::string_view Str(const Obj& o) {
  if (o.type == msgpack::type::STR) return {o.via.str.ptr, o.via.str.size};
  if (o.type == msgpack::type::BIN) return {o.via.bin.ptr, o.via.bin.size};
  return {};
}

int64_t Int(const Obj& o, const char* what) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) return static_cast<int64_t>(o.via.u64);
  if (o.type == msgpack::type::NEGATIVE_INTEGER) return o.via.i64;
  throw WireError{std::string(what) + " is not an integer"};
}

// 32 bytes (bin, or str from an encoder that writes bytes as str), or the
// integer form; a shorter byte string keys by what it has.
KvBlockKey Key(const Obj& o) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) return o.via.u64;
  if (o.type == msgpack::type::NEGATIVE_INTEGER) return static_cast<KvBlockKey>(o.via.i64);
  std::string_view b = Str(o);
  if (o.type != msgpack::type::BIN && o.type != msgpack::type::STR)
    throw WireError{"a block hash is neither bytes nor an integer"};
  if (b.empty()) throw WireError{"a block hash is empty"};
  const size_t from = b.size() > 8 ? b.size() - 8 : 0;
  KvBlockKey v = 0;
  for (size_t i = from; i < b.size(); ++i) v = (v << 8) | static_cast<uint8_t>(b[i]);
  return v;
}

std::vector<KvBlockKey> Keys(const Obj& o) {
  const uint32_t n = ArraySize(o, "block_hashes");
  std::vector<KvBlockKey> keys;
  keys.reserve(n);
  for (uint32_t i = 0; i < n; ++i) keys.push_back(Key(At(o, i)));
  return keys;
}

int OptionalGroup(const Obj& e, uint32_t i) {
  if (ArraySize(e, "an event") <= i || At(e, i).type == msgpack::type::NIL) return 0;
  return static_cast<int>(Int(At(e, i), "group_idx"));
}

std::optional<DecodedKvEvent> DecodeEvent(const Obj& e) {
  const uint32_t n = ArraySize(e, "an event");
  if (n == 0) throw WireError{"an event is an empty array"};
  const std::string_view tag = Str(At(e, 0));
  DecodedKvEvent d;
  if (tag == "BlockStored") {
    if (n < 5) throw WireError{"BlockStored has fewer than 5 fields"};
    d.type = KvEvent::Type::kBlockStored;
    d.blocks = Keys(At(e, 1));
    if (At(e, 2).type != msgpack::type::NIL) d.parent = Key(At(e, 2));
    d.num_tokens = ArraySize(At(e, 3), "token_ids");
    d.block_size = static_cast<int>(Int(At(e, 4), "block_size"));
    if (n > 6) d.medium = std::string(Str(At(e, 6)));
    d.group = OptionalGroup(e, 9);
  } else if (tag == "BlockRemoved") {
    if (n < 2) throw WireError{"BlockRemoved has no block_hashes"};
    d.type = KvEvent::Type::kBlockRemoved;
    d.blocks = Keys(At(e, 1));
    if (n > 2) d.medium = std::string(Str(At(e, 2)));
    d.group = OptionalGroup(e, 3);
  } else if (tag == "AllBlocksCleared") {
    d.type = KvEvent::Type::kAllBlocksCleared;
    if (n > 1) d.medium = std::string(Str(At(e, 1)));
  } else {
    return std::nullopt;  // a type this reader does not know
  }
  return d;
}

}  // namespace

Expected<DecodedKvEventBatch> DecodeKvEventBatch(std::string_view payload) {
  try {
    // Bounds on what a declared length may claim, so a short hostile payload
    // cannot make the reader allocate gigabytes before it finds the end.
    const msgpack::unpack_limit limit(/*array=*/1 << 22, /*map=*/1 << 10, /*str=*/1 << 20,
                                      /*bin=*/1 << 20, /*ext=*/0, /*depth=*/16);
    msgpack::object_handle oh =
        msgpack::unpack(payload.data(), payload.size(), nullptr, nullptr, limit);
    const Obj& batch = oh.get();
    const uint32_t n = ArraySize(batch, "an EventBatch");
    if (n < 2) throw WireError{"an EventBatch has fewer than 2 fields"};
    DecodedKvEventBatch out;
    const Obj& ts = At(batch, 0);
    if (ts.type == msgpack::type::FLOAT64 || ts.type == msgpack::type::FLOAT32) {
      out.ts = ts.via.f64;
    } else {
      out.ts = static_cast<double>(Int(ts, "ts"));
    }
    const Obj& events = At(batch, 1);
    const uint32_t m = ArraySize(events, "events");
    out.events.reserve(m);
    for (uint32_t i = 0; i < m; ++i) {
      if (auto d = DecodeEvent(At(events, i))) out.events.push_back(std::move(*d));
    }
    if (n > 2 && At(batch, 2).type != msgpack::type::NIL)
      out.data_parallel_rank = static_cast<int>(Int(At(batch, 2), "data_parallel_rank"));
    return out;
  } catch (const WireError& e) {
    return InvalidArgument("KV event batch: {}", e.what);
  } catch (const std::exception& e) {  // msgpack-cxx: malformed or truncated bytes
    return InvalidArgument("KV event batch is not msgpack: {}", e.what());
  }
}

}  // namespace brisk
