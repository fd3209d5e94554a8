// KV events on the wire: vLLM's format, which llm-d's KV-cache indexer,
// NVIDIA Dynamo's KV router and `brisk gateway` read. The engine encodes
// (engine/kv_events.h records the events), the gateway decodes
// (gateway/kv_block_index.h keeps what they say).
//
// One message's payload is a msgpack EventBatch [ts, [events...],
// data_parallel_rank]; each event is an array tagged with its type name, as
// msgspec's array_like tagged structs encode them:
//   ["BlockStored", block_hashes, parent_block_hash|nil, token_ids,
//    block_size, lora_id, medium, lora_name, extra_keys, group_idx,
//    kv_cache_spec_kind, kv_cache_spec_sliding_window]
//   ["BlockRemoved", block_hashes, medium, group_idx]
//   ["AllBlocksCleared"]
// A block hash is 32 bytes (bin), or, with vLLM's
// VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES, their low 64 bits as an unsigned
// integer.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace brisk {

// A vLLM sha256_cbor block hash (engine/kv_events.h computes them).
using ExternalBlockHash = std::array<uint8_t, 32>;

// The low 64 bits of a block hash (its last 8 bytes, big-endian): what the
// integer form carries, and the key an index keeps (8 bytes a block).
using KvBlockKey = uint64_t;
KvBlockKey BlockKeyOf(const ExternalBlockHash& h);

struct KvEvent {
  enum class Type : uint8_t { kBlockStored, kBlockRemoved, kAllBlocksCleared };
  Type type = Type::kBlockStored;
  std::vector<ExternalBlockHash> block_hashes;
  std::optional<ExternalBlockHash> parent;  // stored: null for a chain's first block
  std::vector<int32_t> token_ids;           // stored: block_size per block
  // Stored: one per block, the salt of a first block with one ("" = null).
  std::vector<std::string> salts;
  int group = 0;  // 0: full attention; 1: sliding window
};

struct KvEventWireOptions {
  std::string medium = "CPU";  // where the blocks are: this engine's RAM
  // vLLM's VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES: the low 64 bits as an
  // unsigned integer instead of the 32 bytes.
  bool int_block_hashes = false;
  int data_parallel_rank = 0;
};

// A message's sequence-number frame (and a replay request's start, and the
// replay's end marker -1): 8 bytes, big-endian, signed.
std::string EncodeKvEventSeq(int64_t seq);
// nullopt unless `frame` is 8 bytes.
std::optional<int64_t> DecodeKvEventSeq(std::string_view frame);

std::string EncodeKvEventBatch(double ts, std::span<const KvEvent> events, int block_size,
                               int sliding_window, const KvEventWireOptions& wire);

// An event as a subscriber reads it: hashes as keys, whichever form they
// came in.
struct DecodedKvEvent {
  KvEvent::Type type = KvEvent::Type::kBlockStored;
  std::vector<KvBlockKey> blocks;
  std::optional<KvBlockKey> parent;
  int64_t num_tokens = 0;  // stored: how many token ids it carried
  int block_size = 0;      // stored
  std::string medium;      // "" when the sender gave none
  int group = 0;
};

struct DecodedKvEventBatch {
  double ts = 0;
  std::vector<DecodedKvEvent> events;
  int data_parallel_rank = 0;
};

// Reads one message's payload. Shorter events, as older vLLM versions send
// them (no group, no medium), are read with the fields they have; an event
// of an unknown type is skipped. Anything that is not an EventBatch is an
// InvalidArgument error naming what was wrong (never an exception).
Expected<DecodedKvEventBatch> DecodeKvEventBatch(std::string_view payload);

}  // namespace brisk
