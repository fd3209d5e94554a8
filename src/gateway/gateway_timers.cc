// The gateway's timers on its upstream io_context: health checks and load
// polling of every replica (the tiers' and rollout candidates'), and the
// rollouts' stage timers, and this gateway's heartbeat row for the fleet view.
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "gateway/gateway_core.h"
#include "gateway/json_fields.h"
#include "gateway/rollout_manager.h"
#include "util/log.h"

namespace brisk::gateway {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

ReplicaLoad ParseLoad(const std::string& body) {
  ReplicaLoad load;
  Json j = Json::parse(body, nullptr, false);
  if (!j.is_object()) return load;
  load.waiting = static_cast<int32_t>(IntOr(j, "waiting", 0));
  load.running = static_cast<int32_t>(IntOr(j, "running", 0));
  load.kv_fill = NumberOr(j, "kv_fill", 0.0);
  load.known = true;
  return load;
}

void ScheduleHealth(std::shared_ptr<GatewayCore> core);

void CheckReplicas(const std::shared_ptr<GatewayCore>& core) {
  // The tiers' replicas, and those of rollout candidates (kept alive by
  // `hold` while their checks are out).
  std::vector<std::shared_ptr<TierRuntime>> candidates = core->rollouts->Candidates();
  std::vector<TierRuntime*> all;
  for (auto& t : core->tiers) all.push_back(t.get());
  for (auto& c : candidates) all.push_back(c.get());
  for (TierRuntime* tier : all) {
    std::shared_ptr<TierRuntime> hold;
    for (auto& c : candidates) {
      if (c.get() == tier) hold = c;
    }
    for (size_t i = 0; i < tier->clients.size(); ++i) {
      const int replica = static_cast<int>(i);
      const bool brisk = tier->config->upstreams[i].type == "brisk";
      http::UpstreamRequest req;
      req.method = "GET";
      req.path = brisk ? "/load" : "/v1/models";
      if (!tier->config->upstreams[i].api_key.empty()) {
        req.headers.push_back({"Authorization", "Bearer " + tier->config->upstreams[i].api_key});
      }
      std::weak_ptr<GatewayCore> weak = core;
      tier->clients[i]->Fetch(std::move(req), [weak, tier, hold, replica,
                                               brisk](Expected<std::pair<int, std::string>> r) {
        auto core = weak.lock();
        if (!core) return;
        const bool ok = r.ok() && r->first == 200;
        std::lock_guard lock(tier->mu);
        tier->picker.ReportHealth(replica, ok, Clock::now());
        if (ok && brisk) tier->picker.ReportLoad(replica, ParseLoad(r->second));
      });
      if (tier->Model().empty()) {
        http::UpstreamRequest models;
        models.method = "GET";
        models.path = "/v1/models";
        if (!tier->config->upstreams[i].api_key.empty()) {
          models.headers.push_back(
              {"Authorization", "Bearer " + tier->config->upstreams[i].api_key});
        }
        tier->clients[i]->Fetch(std::move(models), [tier,
                                                    hold](Expected<std::pair<int, std::string>> r) {
          if (!r.ok() || r->first != 200) return;
          Json j = Json::parse(r->second, nullptr, false);
          if (!j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty()) {
            return;
          }
          std::string id = StringOr(j["data"][0], "id", "");
          std::lock_guard lock(tier->mu);
          if (tier->model.empty() && !id.empty()) {
            tier->model = id;
            log::Info("gateway: tier {} serves model '{}'", tier->config->name, id);
          }
        });
      }
    }
  }
}

// Rollout stage timers; thresholds are also checked as samples arrive.
void ScheduleRolloutTick(std::shared_ptr<GatewayCore> core) {
  core->rollout_timer->expires_after(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(core->config.rollout.tick_s)));
  std::weak_ptr<GatewayCore> weak = core;
  core->rollout_timer->async_wait([weak](const boost::system::error_code& ec) {
    if (ec) return;
    auto core = weak.lock();
    if (!core) return;
    core->rollouts->Tick();
    ScheduleRolloutTick(core);
  });
}

// Seconds between heartbeats; a gateway not seen for kGoneS is not listed.
constexpr double kHeartbeatS = 1.0;
constexpr int64_t kGoneMs = 10'000;
constexpr int kDecisionsShown = 20;

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// On the database threads: this gateway's row, then every live gateway's and
// the recent decisions into the fleet view. While the database is away the
// view keeps the last lists and says so.
void Heartbeat(GatewayCore& core) {
  const int64_t now = WallMs();
  FleetMember self;
  self.instance = core.instance_id;
  self.address = core.fleet_view.address();
  self.started_ms = core.created_unix * 1000;
  self.seen_ms = now;
  self.active_requests = core.active.load();
  self.requests_total = static_cast<int64_t>(core.next_id.load());
  Status st = core.members->Heartbeat(self);
  auto members =
      st.ok() ? core.members->List(now - kGoneMs, now) : Expected<std::vector<FleetMember>>(st);
  if (!members.ok()) {
    Json last = core.fleet_view.Snapshot();
    core.fleet_view.Store(last["gateways"], nullptr, false);
    return;
  }
  Json gateways = Json::array();
  for (const FleetMember& m : *members) {
    gateways.push_back(FleetMemberJson(m, now, core.instance_id));
  }
  Json decisions = nullptr;
  if (auto audit = core.rollouts->RecentAudit(kDecisionsShown); audit.ok()) {
    decisions = Json::array();
    for (auto& e : *audit) decisions.push_back(std::move(e));
  }
  core.fleet_view.Store(std::move(gateways), std::move(decisions), true);
}

void ScheduleHeartbeat(std::shared_ptr<GatewayCore> core) {
  core->heartbeat_timer->expires_after(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(kHeartbeatS)));
  std::weak_ptr<GatewayCore> weak = core;
  core->heartbeat_timer->async_wait([weak](const boost::system::error_code& ec) {
    if (ec) return;
    auto core = weak.lock();
    if (!core) return;
    // The core joins its database threads before it goes: a plain pointer.
    boost::asio::post(core->db_io, [c = core.get()] { Heartbeat(*c); });
    ScheduleHeartbeat(core);
  });
}

void ScheduleHealth(std::shared_ptr<GatewayCore> core) {
  auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(core->config.replicas.health_interval_s));
  core->health_timer->expires_after(interval);
  std::weak_ptr<GatewayCore> weak = core;
  core->health_timer->async_wait([weak](const boost::system::error_code& ec) {
    if (ec) return;
    auto core = weak.lock();
    if (!core) return;
    CheckReplicas(core);
    ScheduleHealth(core);
  });
}

}  // namespace

void StartTimers(const std::shared_ptr<GatewayCore>& core) {
  core->health_timer = std::make_unique<boost::asio::steady_timer>(core->upstream_io);
  boost::asio::post(core->upstream_io, [weak = std::weak_ptr<GatewayCore>(core)] {
    if (auto c = weak.lock()) CheckReplicas(c);
  });
  ScheduleHealth(core);
  core->rollout_timer = std::make_unique<boost::asio::steady_timer>(core->upstream_io);
  ScheduleRolloutTick(core);
  core->heartbeat_timer = std::make_unique<boost::asio::steady_timer>(core->upstream_io);
  boost::asio::post(core->db_io, [c = core.get()] { Heartbeat(*c); });
  ScheduleHeartbeat(core);
}

}  // namespace brisk::gateway
