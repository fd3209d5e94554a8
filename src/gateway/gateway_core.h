// The gateway's shared state, for its own .cc files: the config, router,
// ledger, the tiers' upstream clients and replica pickers, metrics.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gateway/fleet_members.h"
#include "gateway/gateway_config.h"
#include "gateway/kv_block_index.h"
#include "gateway/kv_event_subscriber.h"
#include "gateway/ledger.h"
#include "gateway/replica_picker.h"
#include "gateway/router.h"
#include "http/server.h"
#include "http/upstream_client.h"
#include "obs/access_log.h"
#include "obs/metrics.h"
#include "obs/span_exporter.h"

namespace brisk::gateway {

class Budgets;
class DashboardStats;
class RolloutManager;
class SharedResponseStore;

struct TierRuntime {
  int index = 0;
  const TierConfig* config = nullptr;
  std::vector<std::unique_ptr<http::UpstreamClient>> clients;  // one per replica
  std::vector<std::string> names;                              // "host:port" per replica
  std::mutex mu;
  ReplicaPicker picker;  // guarded by mu
  std::string model;     // guarded by mu: the id sent upstream ("" until known)
  // Precise prefix routing (prefix_routing.h): the index of the replicas'
  // KV caches and the subscriber that fills it (destroyed first); null
  // unless the tier's upstreams publish KV events.
  std::unique_ptr<KvBlockIndex> kv_index;
  std::unique_ptr<KvEventSubscriber> kv_events;

  TierRuntime(std::vector<std::string> replica_names, PickerOptions options)
      : picker(std::move(replica_names), options) {}
  std::string Model() {
    std::lock_guard lock(mu);
    return model;
  }
};

// Prometheus series of the gateway, registered once.
struct GatewayMetrics {
  explicit GatewayMetrics(metrics::Registry& r) : registry(r) {}
  metrics::Registry& registry;
  // Per (tier, feature, outcome) etc.: created on first use (Get* locks).
  metrics::Counter* Requests(const std::string& tier, const std::string& feature,
                             const std::string& outcome);
  metrics::Counter* Cost(const std::string& tier, const std::string& feature);
  metrics::Counter* Tokens(const std::string& tier, const std::string& feature,
                           const std::string& kind);
  metrics::Counter* Escalations(const std::string& from_tier);
  metrics::Counter* Retries(const std::string& tier);
  metrics::Histogram* Ttft(const std::string& tier);
  metrics::Histogram* Tpot(const std::string& tier);
  metrics::Histogram* EndToEnd(const std::string& tier);
  // brisk_gateway_request_stage_seconds{stage}: the per-stage latency budget.
  metrics::Histogram* Stage(const std::string& stage);
  // brisk_gateway_response_store_errors_total: responses not stored (database errors).
  metrics::Counter* StoreErrors();
  // brisk_gateway_budget_store_outages_total: admissions the budget database could not check.
  metrics::Counter* BudgetStoreOutages();
};

struct GatewayCore {
  GatewayConfig config;
  std::unique_ptr<Router> router;
  std::unique_ptr<Ledger> ledger;
  std::unique_ptr<Budgets> budgets;
  std::unique_ptr<DashboardStats> dashboard;
  std::vector<std::unique_ptr<TierRuntime>> tiers;
  std::unique_ptr<RolloutManager> rollouts;        // after tiers: it points at them
  std::unique_ptr<SharedResponseStore> responses;  // the Responses API's stored objects
  std::unique_ptr<FleetMembers> members;           // every gateway's heartbeat row
  FleetView fleet_view;                            // what the dashboard shows of them

  // Blocking database work (stored responses) runs here, never on the HTTP
  // or upstream threads.
  boost::asio::io_context db_io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> db_work;
  std::vector<std::thread> db_threads;

  boost::asio::io_context upstream_io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::vector<std::thread> upstream_threads;
  std::unique_ptr<boost::asio::steady_timer> health_timer;
  std::unique_ptr<boost::asio::steady_timer> rollout_timer;
  std::unique_ptr<boost::asio::steady_timer> heartbeat_timer;

  std::unique_ptr<http::Server> http;
  metrics::Registry registry;
  std::unique_ptr<GatewayMetrics> metrics;
  std::unique_ptr<SpanExporter> spans;    // logging.otlp_endpoint; null = no export
  std::unique_ptr<AccessLog> access_log;  // logging.access_log; null until Start
  std::atomic<int64_t> active{0};
  std::atomic<uint64_t> next_id{0};
  std::atomic<bool> draining{false};
  int64_t created_unix = 0;
  std::string instance_id;  // random, in request ids: unique across the gateways on one ledger

  ~GatewayCore();
};

// The gateway's callback gauges: database up, requests in flight, and per
// replica its health, outstanding work, reported queue, running sequences and
// KV fill (gateway_metrics.cc).
void RegisterGauges(const std::shared_ptr<GatewayCore>& core);
// Starts the health checks (now, then every health_interval_s) and the
// rollout stage timer (gateway_timers.cc).
void StartTimers(const std::shared_ptr<GatewayCore>& core);
// How replicas are picked, from gateway.yaml's replicas section.
PickerOptions MakePickerOptions(const GatewayConfig::Replicas& rc);
// "http://host:port/base" -> "host:port".
std::string ReplicaName(const std::string& url);
// One http::UpstreamClient per upstream of `tc` into `tier->clients`, on the
// core's upstream io_context.
Status AddUpstreamClients(GatewayCore& core, const TierConfig& tc, TierRuntime* tier);

}  // namespace brisk::gateway
