// The gateway's timers on its upstream io_context: health checks and load
// polling of every replica (the tiers' and rollout candidates'), and the
// rollouts' stage timers.
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
}

}  // namespace brisk::gateway
