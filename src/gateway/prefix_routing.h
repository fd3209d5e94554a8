// Precise prefix routing for a tier (replica_picker.h, PrefixMatch): its
// engines' KV events followed into a KvBlockIndex, and a request's prompt
// looked up there.
//
// Per request (ProxiedRequest), before a replica is picked: the gateway asks
// one of the tier's engines for the prompt's block keys
// (POST /kv/block_hashes/v1/..., the same body the request will carry, so the
// engine renders and salts it as it would for the request itself, and the
// gateway needs no tokenizer), then counts each replica's cached run of them
// in the index. The lookup is skipped (consistent-hash affinity decides) when
// no replica's events are live; it gives up after
// replicas.block_hashes_timeout_s.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "gateway/gateway_core.h"
#include "gateway/replica_picker.h"
#include "kvwire/kv_event_wire.h"
#include "util/status.h"

namespace brisk::gateway {

// Whether the tier routes on its engines' KV events (replicas.prefix_routing
// and at least one upstream with kv_events).
bool PrefixRoutingConfigured(const GatewayConfig& config, const TierConfig& tier);

// Builds the tier's index and starts its subscriber, with its gauges; a no-op
// unless PrefixRoutingConfigured.
Status StartPrefixRouting(GatewayCore& core, TierRuntime* tier);

// The keys and block size in an engine's /kv/block_hashes answer.
struct PromptBlockKeys {
  std::vector<KvBlockKey> keys;
  int block_size = 0;
};
Expected<PromptBlockKeys> ParseBlockHashes(std::string_view body);

// Each replica's cached run of `prompt`'s keys (0 where its events are not live).
PrefixMatch MatchPrompt(const TierRuntime& tier, const PromptBlockKeys& prompt);

}  // namespace brisk::gateway
