// The name of a full KV block's contents: a chained 128-bit hash of its
// parent block's name and its own tokens, rooted at a hash of everything else
// that changes KV contents (the cache salt: the tenant). Equal names mean
// equal contents, so the prefix cache (engine/prefix_cache.h) and the tiers
// under it (engine/kv_tier.h) find a sequence's blocks by them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace brisk {

// XXH3-128 over the parent block's hash and the block's tokens. The root of
// a chain hashes the salt.
struct BlockHash {
  uint64_t lo = 0, hi = 0;
  bool operator==(const BlockHash&) const = default;
};
BlockHash RootBlockHash(std::string_view salt);
BlockHash ChainBlockHash(const BlockHash& parent, std::span<const int32_t> tokens);

// For unordered containers keyed by BlockHash (the bits are already mixed).
struct BlockHashOf {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 31)); }
};

}  // namespace brisk
