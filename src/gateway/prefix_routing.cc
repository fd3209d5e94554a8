#include "gateway/prefix_routing.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "gateway/kv_block_index.h"
#include "gateway/kv_event_subscriber.h"

namespace brisk::gateway {

bool PrefixRoutingConfigured(const GatewayConfig& config, const TierConfig& tier) {
  if (!config.replicas.prefix_routing) return false;
  for (const UpstreamConfig& u : tier.upstreams)
    if (!u.kv_events.empty()) return true;
  return false;
}

namespace {

void RegisterPrefixGauges(GatewayCore& core, TierRuntime* tier) {
  const std::string& name = tier->config->name;
  KvBlockIndex* index = tier->kv_index.get();
  KvEventSubscriber* events = tier->kv_events.get();
  core.registry.AddCallbackGauge(
      "brisk_gateway_kv_index_blocks", "Block keys in the tier's index of its engines' KV caches.",
      {{"tier", name}}, [index] { return static_cast<double>(index->num_blocks()); });
  core.registry.AddCallbackGauge(
      "brisk_gateway_kv_index_bytes", "Memory the tier's KV block index takes, approximately.",
      {{"tier", name}}, [index] { return static_cast<double>(index->bytes()); });
  core.registry.AddCallbackGauge(
      "brisk_gateway_kv_index_evicted_blocks",
      "Block keys the index dropped for its bound (prefix_index_blocks).", {{"tier", name}},
      [index] { return static_cast<double>(index->evicted()); });
  for (int r = 0; r < events->num_replicas(); ++r) {
    const metrics::Labels labels = {{"tier", name}, {"upstream", tier->names[r]}};
    core.registry.AddCallbackGauge(
        "brisk_gateway_kv_events_live",
        "1 while the replica's KV events are followed and its view is re-learnt.", labels,
        [events, r] { return events->Live(r) ? 1.0 : 0.0; });
    core.registry.AddCallbackGauge(
        "brisk_gateway_kv_events_batches", "KV event batches applied from the replica.", labels,
        [events, r] { return static_cast<double>(events->stats(r).batches); });
    core.registry.AddCallbackGauge(
        "brisk_gateway_kv_events_resyncs",
        "Times the replica's view was cleared and re-learnt through its replay socket.", labels,
        [events, r] { return static_cast<double>(events->stats(r).resyncs); });
    core.registry.AddCallbackGauge(
        "brisk_gateway_kv_index_replica_blocks", "Block keys the index holds for the replica.",
        labels, [index, r] { return static_cast<double>(index->replica_blocks(r)); });
  }
}

}  // namespace

Status StartPrefixRouting(GatewayCore& core, TierRuntime* tier) {
  const TierConfig& tc = *tier->config;
  if (!PrefixRoutingConfigured(core.config, tc)) return Status::Ok();
  if (tc.upstreams.size() > static_cast<size_t>(KvBlockIndex::kMaxReplicas)) {
    return InvalidArgument("tier '{}': precise prefix routing follows at most {} upstreams",
                           tc.name, KvBlockIndex::kMaxReplicas);
  }
  tier->kv_index = std::make_unique<KvBlockIndex>(static_cast<int>(tc.upstreams.size()),
                                                  core.config.replicas.prefix_index_blocks);
  std::vector<KvEventSource> sources;
  for (const UpstreamConfig& u : tc.upstreams)
    sources.push_back({u.kv_events, u.kv_events_replay, u.kv_events_topic});
  ASSIGN_OR_RETURN(tier->kv_events,
                   KvEventSubscriber::Start(tc.name, std::move(sources), tier->kv_index.get()));
  RegisterPrefixGauges(core, tier);
  return Status::Ok();
}

Expected<PromptBlockKeys> ParseBlockHashes(std::string_view body) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("a /kv/block_hashes answer is not a JSON object");
  auto bs = j.find("block_size");
  auto hashes = j.find("block_hashes");
  if (bs == j.end() || !bs->is_number_integer() || hashes == j.end() || !hashes->is_array())
    return InvalidArgument("a /kv/block_hashes answer lacks block_size or block_hashes");
  PromptBlockKeys out;
  out.block_size = bs->get<int>();
  out.keys.reserve(hashes->size());
  for (const auto& h : *hashes) {
    if (!h.is_string()) return InvalidArgument("a block hash is not a string");
    const std::string& s = h.get_ref<const std::string&>();
    KvBlockKey key = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), key, 16);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty())
      return InvalidArgument("block hash '{}' is not 16 hex digits", s.substr(0, 32));
    out.keys.push_back(key);
  }
  return out;
}

PrefixMatch MatchPrompt(const TierRuntime& tier, const PromptBlockKeys& prompt) {
  PrefixMatch m;
  m.prompt_blocks = static_cast<int32_t>(prompt.keys.size());
  m.block_size = prompt.block_size;
  if (!tier.kv_index || !tier.kv_events) return m;
  m.cached_blocks = tier.kv_index->MatchPrefix(prompt.keys);
  m.known.resize(m.cached_blocks.size());
  for (size_t r = 0; r < m.known.size(); ++r)
    m.known[r] = tier.kv_events->Live(static_cast<int>(r)) ? 1 : 0;
  return m;
}

}  // namespace brisk::gateway
