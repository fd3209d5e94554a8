#include "engine/kv_events.h"

#include <openssl/evp.h>

#include <cassert>
#include <cstring>

namespace brisk {
namespace {

// Canonical CBOR (RFC 8949, 4.2.1): the shortest head for each length.
void CborHead(std::vector<uint8_t>& out, uint8_t major, uint64_t n) {
  const uint8_t m = static_cast<uint8_t>(major << 5);
  if (n < 24) {
    out.push_back(static_cast<uint8_t>(m | n));
  } else if (n <= 0xff) {
    out.push_back(m | 24);
    out.push_back(static_cast<uint8_t>(n));
  } else if (n <= 0xffff) {
    out.push_back(m | 25);
    for (int s = 8; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(n >> s));
  } else if (n <= 0xffffffffull) {
    out.push_back(m | 26);
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(n >> s));
  } else {
    out.push_back(m | 27);
    for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(n >> s));
  }
}

constexpr uint8_t kCborUint = 0, kCborBytes = 2, kCborText = 3, kCborArray = 4;
constexpr uint8_t kCborNull = 0xf6;

void CborText(std::vector<uint8_t>& out, std::string_view s) {
  CborHead(out, kCborText, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

ExternalBlockHash Sha256(const std::vector<uint8_t>& in) {
  ExternalBlockHash h{};
  unsigned int len = 0;
  const int ok = EVP_Digest(in.data(), in.size(), h.data(), &len, EVP_sha256(), nullptr);
  assert(ok == 1 && len == h.size());
  (void)ok;
  return h;
}

}  // namespace

ExternalBlockHasher::ExternalBlockHasher(std::string_view hash_seed) {
  std::vector<uint8_t> in;
  CborText(in, hash_seed);
  none_hash_ = Sha256(in);
}

ExternalBlockHash ExternalBlockHasher::Chain(const ExternalBlockHash& parent,
                                             std::span<const int32_t> tokens,
                                             std::string_view salt) const {
  thread_local std::vector<uint8_t> in;
  in.clear();
  CborHead(in, kCborArray, 3);
  CborHead(in, kCborBytes, parent.size());
  in.insert(in.end(), parent.begin(), parent.end());
  CborHead(in, kCborArray, tokens.size());
  for (int32_t t : tokens) CborHead(in, kCborUint, static_cast<uint32_t>(t));
  if (salt.empty()) {
    in.push_back(kCborNull);
  } else {
    CborHead(in, kCborArray, 1);
    CborText(in, salt);
  }
  return Sha256(in);
}

// ---- the log ----------------------------------------------------------------

KvEventLog::KvEventLog(int64_t num_blocks, int block_size, int sliding_window)
    : block_size_(block_size),
      sliding_window_(sliding_window),
      hash_(static_cast<size_t>(num_blocks)),
      groups_(static_cast<size_t>(num_blocks), 0) {}

void KvEventLog::Stored(int32_t block, const ExternalBlockHash& hash,
                        const ExternalBlockHash* parent, std::span<const int32_t> tokens,
                        std::string_view salt, bool in_window) {
  assert(static_cast<int>(tokens.size()) == block_size_);
  hash_[block] = hash;
  const bool window = sliding_window_ > 0 && in_window;
  groups_[block] = window ? 3 : 1;
  for (int group = 0; group <= (window ? 1 : 0); ++group) {
    // One chain's blocks in a row merge into one event, as vLLM sends them:
    // into the group's latest event if it stores this block's parent.
    KvEvent* last = nullptr;
    for (auto it = events_.rbegin(); parent && it != events_.rend(); ++it) {
      if (it->group != group && it->type != KvEvent::Type::kAllBlocksCleared) continue;
      if (it->type == KvEvent::Type::kBlockStored && it->block_hashes.back() == *parent)
        last = &*it;
      break;
    }
    if (!last) {
      KvEvent e;
      e.type = KvEvent::Type::kBlockStored;
      e.group = group;
      if (parent) e.parent = *parent;
      events_.push_back(std::move(e));
      last = &events_.back();
    }
    last->block_hashes.push_back(hash);
    last->token_ids.insert(last->token_ids.end(), tokens.begin(), tokens.end());
    last->salts.emplace_back(salt);
  }
}

void KvEventLog::Removed(const ExternalBlockHash& hash, int group) {
  if (!events_.empty() && events_.back().type == KvEvent::Type::kBlockRemoved &&
      events_.back().group == group) {
    events_.back().block_hashes.push_back(hash);
    return;
  }
  KvEvent e;
  e.type = KvEvent::Type::kBlockRemoved;
  e.group = group;
  e.block_hashes.push_back(hash);
  events_.push_back(std::move(e));
}

void KvEventLog::Forgotten(int32_t block) {
  const uint8_t g = groups_[block];
  groups_[block] = 0;
  if (g & 1) Removed(hash_[block], 0);
  if (g & 2) Removed(hash_[block], 1);
}

void KvEventLog::LocalsDropped(int32_t block) {
  if (!(groups_[block] & 2)) return;
  groups_[block] &= 1;
  Removed(hash_[block], 1);
}

void KvEventLog::Cleared() {
  std::fill(groups_.begin(), groups_.end(), 0);
  events_.clear();  // what came before is moot
  KvEvent e;
  e.type = KvEvent::Type::kAllBlocksCleared;
  events_.push_back(std::move(e));
}

std::vector<KvEvent> KvEventLog::Take() {
  std::vector<KvEvent> out;
  out.swap(events_);
  return out;
}

}  // namespace brisk
