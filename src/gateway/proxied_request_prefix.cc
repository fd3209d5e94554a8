// ProxiedRequest's prefix lookup (prefix_routing.h): before the first pick
// in a tier whose engines publish KV events, the prompt's block keys from one
// of them, matched against the tier's index.
#include <fmt/format.h>

#include "gateway/prefix_routing.h"
#include "gateway/proxied_request.h"
#include "util/log.h"

namespace brisk::gateway {

namespace {

void CountLookup(GatewayCore& core, const std::string& tier, const char* result) {
  core.metrics->registry
      .GetCounter("brisk_gateway_prefix_lookups_total",
                  "Prompts looked up for precise prefix routing, by result.",
                  {{"tier", tier}, {"result", result}})
      ->Inc();
}

}  // namespace

bool ProxiedRequest::LookUpPrefix() {
  if (prefix_tier_pos_ == tier_pos_) return false;
  prefix_tier_pos_ = tier_pos_;
  prefix_.reset();
  TierRuntime& tier = Tier();
  if (on_candidate_ || !tier.kv_events ||
      (endpoint_ != Endpoint::kChat && endpoint_ != Endpoint::kCompletions))
    return false;
  const std::string& tier_name = tier.config->name;
  if (!tier.kv_events->AnyLive()) {
    CountLookup(*core_, tier_name, "no_live_events");
    return false;
  }
  // Any replica renders and salts the prompt the same way: the least loaded.
  std::optional<int> r;
  {
    std::lock_guard tl(tier.mu);
    r = tier.picker.Pick(0, {}, Clock::now());
  }
  if (!r) return false;
  http::UpstreamRequest req;
  req.path = std::string("/kv/block_hashes") + EndpointPath(endpoint_);
  req.headers = {{"Content-Type", "application/json"}, {"X-Request-Id", request_id_}};
  const UpstreamConfig& up = tier.config->upstreams[*r];
  if (!up.api_key.empty()) req.headers.push_back({"Authorization", "Bearer " + up.api_key});
  req.body = UpstreamBody(false).dump(-1, ' ', false, Json::error_handler_t::replace);
  prefix_pending_ = true;
  auto self = shared_from_this();
  prefix_timer_ = std::make_shared<boost::asio::steady_timer>(core_->upstream_io);
  prefix_timer_->expires_after(std::chrono::milliseconds(
      static_cast<int64_t>(core_->config.replicas.block_hashes_timeout_s * 1000)));
  prefix_timer_->async_wait([self](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: the answer came first
    self->Guarded(
        [&] { self->PrefixLookedUp(Status(StatusCode::kUnavailable, "timed out"), "timeout"); });
  });
  auto body = std::make_shared<std::string>();
  auto status = std::make_shared<int>(0);
  http::UpstreamCallbacks cb;
  cb.on_head = [status](int st, const http::Headers&) { *status = st; };
  cb.on_data = [body](std::string_view data) {
    if (body->size() < (size_t{16} << 20)) body->append(data);
  };
  cb.on_done = [self, body, status](const Status& st) {
    self->Guarded([&] {
      if (!st.ok()) return self->PrefixLookedUp(st, "failed");
      self->PrefixLookedUp(std::make_pair(*status, std::move(*body)), "");
    });
  };
  prefix_call_ = tier.clients[*r]->Send(std::move(req), std::move(cb));
  return true;
}

void ProxiedRequest::PrefixLookedUp(Expected<std::pair<int, std::string>> answer,
                                    const char* result) {
  std::lock_guard lock(mu_);
  if (!prefix_pending_) return;  // the other of answer and timer came first
  prefix_pending_ = false;
  if (prefix_timer_) prefix_timer_->cancel();
  if (prefix_call_) prefix_call_->Cancel();
  prefix_call_.reset();
  TierRuntime& tier = Tier();
  std::string why;
  if (answer.ok() && answer->first == 200) {
    auto keys = ParseBlockHashes(answer->second);
    if (keys.ok()) {
      PrefixMatch m = MatchPrompt(tier, *keys);
      int32_t best = 0;
      for (size_t i = 0; i < m.cached_blocks.size(); ++i)
        if (m.known[i]) best = std::max(best, m.cached_blocks[i]);
      result = best > 0 ? "matched" : "no_match";
      prefix_ = std::move(m);
    } else {
      result = "failed";
      why = keys.status().message();
    }
  } else if (answer.ok()) {
    result = "failed";
    why = fmt::format("HTTP {}", answer->first);
  } else {
    why = answer.status().message();
  }
  CountLookup(*core_, tier.config->name, result);
  if (!why.empty())
    log::Debug("gateway: request {}: no prefix lookup ({}): {}", request_id_, result, why);
  TryNext();
}

void ProxiedRequest::CountCachedPrefix(const PrefixMatch& prefix, int replica) {
  const std::string& tier = Tier().config->name;
  const auto r = static_cast<size_t>(replica);
  const int64_t cached =
      r < prefix.cached_blocks.size() && prefix.known[r] ? prefix.cached_blocks[r] : 0;
  auto& reg = core_->metrics->registry;
  reg.GetCounter("brisk_gateway_prefix_prompt_tokens_total",
                 "Full-block prompt tokens of requests routed by their cached prefix.",
                 {{"tier", tier}})
      ->Inc(static_cast<double>(int64_t{prefix.prompt_blocks} * prefix.block_size));
  reg.GetCounter("brisk_gateway_prefix_cached_tokens_total",
                 "Of those, the tokens the chosen replica held in its KV cache (by its events).",
                 {{"tier", tier}})
      ->Inc(static_cast<double>(cached * prefix.block_size));
}

}  // namespace brisk::gateway
