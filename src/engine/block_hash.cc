#include "engine/block_hash.h"

#include <xxhash.h>

#include <cstring>
#include <vector>

namespace brisk {

BlockHash RootBlockHash(std::string_view salt) {
  XXH128_hash_t h = XXH3_128bits_withSeed(salt.data(), salt.size(), 0xb15cull);
  return {h.low64, h.high64};
}

BlockHash ChainBlockHash(const BlockHash& parent, std::span<const int32_t> tokens) {
  // The parent hash is the seed of the low half and mixed into the input, so
  // equal tokens under different parents differ in all 128 bits.
  thread_local std::vector<uint8_t> buf;
  buf.resize(sizeof(parent) + tokens.size_bytes());
  std::memcpy(buf.data(), &parent, sizeof(parent));
  std::memcpy(buf.data() + sizeof(parent), tokens.data(), tokens.size_bytes());
  XXH128_hash_t h = XXH3_128bits_withSeed(buf.data(), buf.size(), parent.lo);
  return {h.low64, h.high64};
}

}  // namespace brisk
