// The gateway's Prometheus series (GatewayMetrics in gateway_core.h).
#include "gateway/gateway_core.h"
#include "gateway/rollout_manager.h"

namespace brisk::gateway {

metrics::Counter* GatewayMetrics::Requests(const std::string& tier, const std::string& feature,
                                           const std::string& outcome) {
  return registry.GetCounter("brisk_gateway_requests_total", "Requests answered by the gateway.",
                             {{"tier", tier}, {"feature", feature}, {"outcome", outcome}});
}
metrics::Counter* GatewayMetrics::Cost(const std::string& tier, const std::string& feature) {
  return registry.GetCounter("brisk_gateway_cost_usd_total", "Cost of requests, US dollars.",
                             {{"tier", tier}, {"feature", feature}});
}
metrics::Counter* GatewayMetrics::Tokens(const std::string& tier, const std::string& feature,
                                         const std::string& kind) {
  return registry.GetCounter("brisk_gateway_tokens_total",
                             "Tokens by kind (input, cached_input, output).",
                             {{"tier", tier}, {"feature", feature}, {"kind", kind}});
}
metrics::Counter* GatewayMetrics::Escalations(const std::string& from_tier) {
  return registry.GetCounter("brisk_gateway_escalations_total",
                             "Cascade escalations, by the tier escalated from.",
                             {{"from_tier", from_tier}});
}
metrics::Counter* GatewayMetrics::Retries(const std::string& tier) {
  return registry.GetCounter("brisk_gateway_retries_total",
                             "Requests retried on another replica of the tier.", {{"tier", tier}});
}
metrics::Histogram* GatewayMetrics::Ttft(const std::string& tier) {
  return registry.GetHistogram("brisk_gateway_ttft_seconds", "Time to first token via the gateway.",
                               metrics::LatencyBucketsSeconds(), {{"tier", tier}});
}
metrics::Histogram* GatewayMetrics::Tpot(const std::string& tier) {
  return registry.GetHistogram("brisk_gateway_tpot_seconds",
                               "Time per output token after the first.",
                               metrics::TokenLatencyBucketsSeconds(), {{"tier", tier}});
}
metrics::Counter* GatewayMetrics::StoreErrors() {
  return registry.GetCounter("brisk_gateway_response_store_errors_total",
                             "Responses API objects not stored because the database failed "
                             "(their previous_response_id follow-ups get a 404).",
                             {});
}

metrics::Counter* GatewayMetrics::BudgetStoreOutages() {
  return registry.GetCounter("brisk_gateway_budget_store_outages_total",
                             "Requests whose budget check could not reach the database "
                             "(admitted or refused per budgets.on_store_outage).",
                             {});
}

metrics::Histogram* GatewayMetrics::Stage(const std::string& stage) {
  return registry.GetHistogram("brisk_gateway_request_stage_seconds",
                               "Per-stage latency budget of requests answered through the gateway "
                               "(Server-Timing).",
                               metrics::LatencyBucketsSeconds(), {{"stage", stage}});
}
metrics::Histogram* GatewayMetrics::EndToEnd(const std::string& tier) {
  return registry.GetHistogram("brisk_gateway_e2e_seconds", "Request time, end to end.",
                               metrics::LatencyBucketsSeconds(), {{"tier", tier}});
}

void RegisterGauges(const std::shared_ptr<GatewayCore>& core) {
  std::weak_ptr<GatewayCore> weak = core;
  core->registry.AddCallbackGauge(
      "brisk_gateway_database_up",
      "1 while the shared database (rollouts, budgets, stored responses) answered the last sync.",
      {}, [weak] {
        auto c = weak.lock();
        return c && c->rollouts && c->rollouts->store_ok() ? 1.0 : 0.0;
      });
  core->registry.AddCallbackGauge("brisk_gateway_active_requests", "Requests in flight.", {},
                                  [weak] {
                                    auto c = weak.lock();
                                    return c ? static_cast<double>(c->active.load()) : 0.0;
                                  });
  for (auto& t : core->tiers) {
    TierRuntime* tier = t.get();
    for (size_t i = 0; i < tier->names.size(); ++i) {
      metrics::Labels labels = {{"tier", tier->config->name}, {"upstream", tier->names[i]}};
      auto read = [tier, i](auto field) {
        return [tier, i, field] {
          std::lock_guard lock(tier->mu);
          return field(tier->picker.replicas()[i]);
        };
      };
      core->registry.AddCallbackGauge(
          "brisk_gateway_upstream_healthy", "1 while the replica is not ejected.", labels,
          read([](const ReplicaState& s) { return s.ejected ? 0.0 : 1.0; }));
      core->registry.AddCallbackGauge(
          "brisk_gateway_upstream_outstanding", "This gateway's requests in flight there.", labels,
          read([](const ReplicaState& s) { return static_cast<double>(s.outstanding); }));
      core->registry.AddCallbackGauge(
          "brisk_gateway_upstream_queue_depth", "Waiting sequences the replica last reported.",
          labels, read([](const ReplicaState& s) { return static_cast<double>(s.load.waiting); }));
      core->registry.AddCallbackGauge(
          "brisk_gateway_upstream_running", "Running sequences the replica last reported.", labels,
          read([](const ReplicaState& s) { return static_cast<double>(s.load.running); }));
      core->registry.AddCallbackGauge("brisk_gateway_upstream_kv_fill",
                                      "KV cache fill the replica last reported (0..1).", labels,
                                      read([](const ReplicaState& s) { return s.load.kv_fill; }));
    }
  }
}

}  // namespace brisk::gateway
