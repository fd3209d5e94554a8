#include "gateway/rollout_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <map>

#include "gateway/gateway_core.h"
#include "gateway/gateway_routes.h"
#include "gateway/json_fields.h"
#include "gateway/judge.h"
#include "gateway/rollout_store.h"
#include "gateway/rollout_tier_slot.h"
#include "gateway/stream_rewriter.h"
#include "gateway/utc_time.h"
#include "grammar/answer_check.h"
#include "http/caller_identity.h"
#include "http/openai_error.h"
#include "http/responses_items.h"
#include "util/constant_time.h"
#include "util/log.h"

namespace brisk::gateway {

using Json = nlohmann::json;

namespace {

constexpr int kHistoryKept = 20;
// Samples waiting for the database (it is away): the newest are kept.
constexpr size_t kOutboxKept = 100'000;

// The one counter of rollout decisions; Audit and AuditRefusal both count.
constexpr std::string_view kDecisionsMetric = "brisk_gateway_rollout_decisions_total";
constexpr std::string_view kDecisionsHelp =
    "Rollout transitions, by tier and action (start, advance, promote, rollback, abort, "
    "refused).";

void CountDecision(metrics::Registry& registry, const std::string& tier,
                   const std::string& action) {
  registry.GetCounter(kDecisionsMetric, kDecisionsHelp, {{"tier", tier}, {"action", action}})
      ->Inc();
}

// The candidate's config and runtime in one allocation: the runtime points
// at the config, and requests in flight keep both alive (aliasing pointer).
struct CandidateSet {
  TierConfig config;
  std::unique_ptr<TierRuntime> runtime;
};

}  // namespace

namespace {

// A wall-clock time of the shared record on this gateway's steady clock.
RolloutClock::time_point SteadyOf(int64_t wall_ms, RolloutClock::time_point now_steady,
                                  int64_t now_wall_ms) {
  return now_steady + std::chrono::milliseconds(wall_ms - now_wall_ms);
}

int64_t WallOf(RolloutClock::time_point t, RolloutClock::time_point now_steady,
               int64_t now_wall_ms) {
  return now_wall_ms +
         std::chrono::duration_cast<std::chrono::milliseconds>(t - now_steady).count();
}

}  // namespace

// A Rollout object for `r`, fed with the fleet's samples of its window and
// its judge totals. `with_samples` false: the stage alone (history).
Expected<std::shared_ptr<Rollout>> RolloutManager::Build(const StoredRollout& r,
                                                         bool with_samples) {
  auto spec = ParseRolloutSpec(r.spec);
  if (!spec.ok()) return spec.status().WithContext(fmt::format("rollout {}", r.id));
  const auto now = RolloutClock::now();
  const int64_t wall = WallMs();
  auto ro = std::make_shared<Rollout>(r.id, *spec, r.started_by, SteadyOf(r.started_ms, now, wall));
  ro->Restore(r.stage, r.step, SteadyOf(r.started_ms, now, wall),
              SteadyOf(r.stage_since_ms, now, wall));
  if (!with_samples) return ro;
  const int64_t since = wall - static_cast<int64_t>(spec->thresholds.window_s * 1000) - 1000;
  ASSIGN_OR_RETURN(auto samples, store_->Samples(r.id, since));
  for (const StoredSample& s : samples) {
    ArmSample a;
    a.time = SteadyOf(s.time_ms, now, wall);
    a.status = s.status;
    a.ttft_ms = s.ttft_ms;
    a.tpot_ms = s.tpot_ms;
    a.so_valid = s.so_valid;
    ro->Record(s.candidate, a);
  }
  ASSIGN_OR_RETURN(JudgeTotals j, store_->Judged(r.id, r.stage_since_ms));
  ro->SetJudgeTotals(j.judged, j.score_sum, j.inconsistent, j.stage_pairs);
  return ro;
}

RolloutManager::RolloutManager(GatewayCore* core, std::unique_ptr<RolloutStore> store)
    : core_(core), store_(std::move(store)) {
  for (size_t i = 0; i < core_->tiers.size(); ++i) tiers_.push_back(std::make_unique<TierSlot>());
  const std::string& path = core_->config.rollout.audit_log;
  if (!path.empty()) {
    audit_file_.open(path, std::ios::app);
    if (!audit_file_) log::Error("gateway: cannot open the rollout audit log '{}'", path);
  }
}

RolloutManager::~RolloutManager() = default;

bool RolloutManager::store_ok() const { return store_ok_.load(); }

void RolloutManager::ScheduleSync() {
  if (sync_scheduled_.exchange(true)) return;
  boost::asio::post(core_->db_io, [this] {
    sync_scheduled_.store(false);
    Sync();
  });
}

void RolloutManager::Sync() {
  std::lock_guard sync_lock(sync_mu_);  // one sync at a time on this gateway
  std::vector<std::pair<std::string, StoredSample>> out;
  {
    std::lock_guard lock(mu_);
    out.swap(outbox_);
  }
  // The samples of this gateway's requests, grouped by rollout.
  std::map<std::string, std::vector<StoredSample>> by_rollout;
  for (auto& [id, sample] : out) by_rollout[id].push_back(sample);
  Status st = Status::Ok();
  for (const auto& [id, samples] : by_rollout) {
    if (st.ok()) st = store_->AddSamples(id, samples);
  }
  auto active = st.ok() ? store_->Active() : Expected<std::vector<StoredRollout>>(st);
  auto finished = active.ok() ? store_->Finished(kHistoryKept)
                              : Expected<std::vector<StoredRollout>>(active.status());
  if (!finished.ok()) {
    // The database is away: the samples wait, the splits stay as they are,
    // and no decision is taken until it is back.
    if (store_ok_.exchange(false)) {
      log::Warn("gateway: rollouts frozen (the database is unreachable: {})",
                finished.status().message());
    }
    std::lock_guard lock(mu_);
    out.insert(out.end(), std::make_move_iterator(outbox_.begin()),
               std::make_move_iterator(outbox_.end()));
    if (out.size() > kOutboxKept) out.erase(out.begin(), out.end() - kOutboxKept);
    outbox_.swap(out);
    return;
  }
  if (!store_ok_.exchange(true)) log::Info("gateway: rollouts resumed (the database is back)");
  const int64_t wall = WallMs();
  if (wall >= next_trim_ms_) {
    next_trim_ms_ = wall + 60'000;
    // Samples older than any window; a day of them is kept for inspection.
    (void)store_->Trim(wall - 24 * 3600 * 1000);
  }
  std::vector<std::pair<StoredRollout, std::shared_ptr<Rollout>>> current;
  for (StoredRollout& r : *active) {
    auto ro = Build(r, true);
    if (!ro.ok()) {
      log::Error("gateway: {}", ro.status().message());
      continue;
    }
    if (auto d = (*ro)->Tick(RolloutClock::now())) {
      StoredRollout next = r;
      next.stage = (*ro)->stage();
      next.step = (*ro)->step();
      next.stage_since_ms = wall;
      next.version = r.version + 1;
      next.finished = (*ro)->finished();
      const Json entry = AuditEntry(**ro, *d, wall);
      auto won = store_->Decide(next, entry);
      if (won.ok() && *won) {
        LocalAudit(**ro, *d, entry);
        r = next;
      } else if (won.ok()) {
        log::Debug("gateway: rollout {}: another gateway decided first", r.id);
        continue;  // the winner's state arrives with the next sync
      } else {
        log::Warn("gateway: rollout {}: decision not written: {}", r.id, won.status().message());
        continue;
      }
    }
    current.emplace_back(r, std::move(*ro));
  }
  Apply(current, *finished);
}

void RolloutManager::Apply(std::vector<std::pair<StoredRollout, std::shared_ptr<Rollout>>>& current,
                           const std::vector<StoredRollout>& finished) {
  std::vector<std::vector<std::shared_ptr<Rollout>>> history(tiers_.size());
  for (const StoredRollout& r : finished) {
    const int t = FindTier(core_->config, r.tier);
    if (t < 0) continue;
    if (auto ro = Build(r, false); ro.ok()) history[t].push_back(std::move(*ro));
  }
  std::lock_guard lock(mu_);
  std::vector<bool> seen(tiers_.size(), false);
  for (auto& [record, ro] : current) {
    const int t = FindTier(core_->config, record.tier);
    if (t < 0) continue;
    TierSlot& slot = *tiers_[t];
    seen[t] = true;
    if (ro->finished()) {
      slot.rollout.reset();
      slot.candidate.reset();
      slot.candidate_of.clear();
      // Decided in this sync: the history read before the decision lacks it.
      auto& h = history[t];
      if (std::none_of(h.begin(), h.end(), [&](const auto& x) { return x->id() == record.id; }))
        h.insert(h.begin(), ro);
      continue;
    }
    if (slot.candidate_of != record.id) {
      // A rollout this gateway has not served yet (another gateway started
      // it, or this one just did): the candidate's clients, hot from here on.
      auto cand = MakeCandidate(t, ro->spec());
      if (!cand.ok()) {
        log::Error("gateway: rollout {}: {}", record.id, cand.status().message());
        continue;
      }
      slot.candidate = std::move(*cand);
      slot.candidate_of = record.id;
    }
    slot.rollout = ro;
    slot.record = record;
  }
  for (size_t t = 0; t < tiers_.size(); ++t) {
    if (!seen[t]) {
      tiers_[t]->rollout.reset();
      tiers_[t]->candidate.reset();
      tiers_[t]->candidate_of.clear();
    }
    tiers_[t]->history = std::move(history[t]);
  }
}

Expected<std::shared_ptr<TierRuntime>> RolloutManager::MakeCandidate(int t,
                                                                     const RolloutSpec& spec) {
  // The candidate's config and runtime in one allocation (CandidateSet).
  auto set = std::make_shared<CandidateSet>();
  set->config = core_->config.tiers[t];
  set->config.upstreams = spec.upstreams;
  set->config.model = spec.model;
  std::vector<std::string> names;
  for (const UpstreamConfig& u : spec.upstreams) names.push_back(ReplicaName(u.url));
  set->runtime = std::make_unique<TierRuntime>(names, MakePickerOptions(core_->config.replicas));
  set->runtime->index = t;
  set->runtime->config = &set->config;
  set->runtime->names = names;
  set->runtime->model = spec.model;
  RETURN_IF_ERROR(AddUpstreamClients(*core_, set->config, set->runtime.get()));
  return std::shared_ptr<TierRuntime>(set, set->runtime.get());
}

RolloutArm RolloutManager::Assign(int tier, double dice, double dice2) {
  std::lock_guard lock(mu_);
  TierSlot& slot = *tiers_[tier];
  RolloutArm arm;
  if (!slot.rollout || slot.rollout->finished()) return arm;
  arm.rollout = slot.rollout;
  arm.rollout_id = slot.rollout->id();
  if (dice < slot.rollout->CandidateShare()) {
    arm.candidate = slot.candidate;
  } else {
    arm.shadow = dice2 < slot.rollout->ShadowShare();
  }
  return arm;
}

void RolloutManager::Record(const RolloutArm& arm, bool candidate, const ArmSample& sample) {
  if (!arm.rollout) return;
  StoredSample s;
  s.candidate = candidate;
  s.time_ms = WallOf(sample.time, RolloutClock::now(), WallMs());
  s.status = sample.status;
  s.ttft_ms = sample.ttft_ms;
  s.tpot_ms = sample.tpot_ms;
  s.so_valid = sample.so_valid;
  {
    std::lock_guard lock(mu_);
    outbox_.emplace_back(arm.rollout_id, s);
  }
  // Decided at once (every gateway's samples count): a breach sends new
  // requests to the baseline without waiting for the next tick.
  ScheduleSync();
}

void RolloutManager::Tick() { ScheduleSync(); }

std::shared_ptr<TierRuntime> RolloutManager::CandidateOf(const std::shared_ptr<Rollout>& rollout) {
  std::lock_guard lock(mu_);
  for (auto& slot : tiers_) {
    if (slot->rollout == rollout) return slot->candidate;
  }
  return nullptr;
}

std::vector<std::shared_ptr<TierRuntime>> RolloutManager::Candidates() {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<TierRuntime>> out;
  for (auto& slot : tiers_) {
    if (slot->candidate) out.push_back(slot->candidate);
  }
  return out;
}

// --- Audit. ---

void RolloutManager::WriteAudit(Json entry) {
  // The shared log is the database's; the file has this gateway's decisions.
  log::Info("gateway: rollout audit: {}", entry.dump());
  std::lock_guard lock(file_mu_);
  if (audit_file_) {
    audit_file_ << entry.dump(-1, ' ', false, Json::error_handler_t::replace) << '\n';
    audit_file_.flush();
  }
}

Json RolloutManager::AuditEntry(const Rollout& r, const RolloutDecision& d, int64_t now) {
  Json e = {{"time", FormatRfc3339Ms(now)}, {"time_unix_ms", now},  {"rollout", r.id()},
            {"tier", r.spec().tier},        {"who", d.who},         {"action", d.action},
            {"from", StageName(d.from)},    {"to", StageName(d.to)}};
  if (d.step >= 0) e["step"] = d.step;
  if (d.to == RolloutStage::kCanary || d.to == RolloutStage::kPromoted) {
    e["candidate_share"] = r.CandidateShare();
  }
  if (!d.metric.empty()) {
    e["metric"] = d.metric;
    e["value"] = d.value;
    e["limit"] = d.limit;
  }
  if (!d.detail.empty()) e["detail"] = d.detail;
  return e;
}

void RolloutManager::LocalAudit(const Rollout& r, const RolloutDecision& d, Json entry) {
  if (core_->metrics) CountDecision(core_->registry, r.spec().tier, d.action);
  WriteAudit(std::move(entry));
}

void RolloutManager::AuditRefusal(const std::string& tier, const std::string& who,
                                  const std::string& why) {
  const int64_t now = WallMs();
  CountDecision(core_->registry, tier, "refused");
  Json entry = {{"time", FormatRfc3339Ms(now)}, {"time_unix_ms", now}, {"tier", tier}, {"who", who},
                {"action", "refused"},          {"stage", "gate"},     {"detail", why}};
  if (Status st = store_->AuditAlone(entry, now); !st.ok()) {
    log::Warn("gateway: rollout audit entry not stored: {}", st.message());
  }
  WriteAudit(std::move(entry));
}

}  // namespace brisk::gateway
