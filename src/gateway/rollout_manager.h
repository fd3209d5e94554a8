// The gateway's rollouts: at most one per tier, each a Rollout
// (rollout.h) plus the candidate's upstream clients, kept hot beside the
// tier's baseline set for as long as the rollout lasts.
//
// Admin API (bearer token = gateway.yaml rollout.admin_key, apart from the
// callers' keys; off when unset):
//   POST /admin/rollouts           start: a RolloutSpec (JSON). The gate
//                                  comes first: 412 unless the spec carries a
//                                  passing `brisk eval golden --save-gate`
//                                  report whose serving key is what every
//                                  candidate upstream reports (/v1/models).
//   GET  /admin/rollouts           every rollout's status (live windows)
//   POST /admin/rollouts/promote   {"tier"}: next stage now
//   POST /admin/rollouts/abort     {"tier"}: all traffic back to the baseline
//   GET  /admin/audit              the audit log's recent entries (every gateway's)
//
// Shared by every gateway on the ledger's database (rollout_store.h): a
// rollout started through one gateway runs on all of them; each writes its
// samples there and decides on everyone's, and a decision (advance,
// promote, rollback, abort) is taken once, by whichever gateway writes it
// first. Each gateway syncs when a sample arrives and on every tick
// (rollout.tick_s): it writes its samples, reads the rollouts, takes what
// decision the fleet's samples call for, and applies the record to its
// routing. While the database is unreachable, rollouts freeze: the split
// stays as it was, samples wait (up to 100,000), nothing is decided.
//
// Every decision and refusal at the gate is written to the shared audit log
// (and this gateway's own to rollout.audit_log, JSON lines): when, who (the
// admin key, or "auto"), what, and for automatic decisions the metric, its
// value and its limit.
//
// Threads: every method is thread-safe; the database work runs on the
// gateway's database threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gateway/rollout.h"
#include "gateway/rollout_store.h"
#include "http/server.h"

namespace brisk::gateway {

struct GatewayCore;
struct TierRuntime;
class Judge;

// Where one request of a tier goes while that tier has a rollout.
struct RolloutArm {
  std::shared_ptr<Rollout> rollout;        // null: no rollout on the tier
  std::shared_ptr<TierRuntime> candidate;  // null: the baseline serves it
  bool shadow = false;                     // also send a copy to the candidate
  std::string rollout_id;
};

// One shadow pair: the baseline's answer and the candidate's, judged once
// both are in.
struct ShadowPair;

class RolloutManager {
 public:
  RolloutManager(GatewayCore* core, std::unique_ptr<RolloutStore> store);
  ~RolloutManager();

  // For a request entering tier `tier`; `dice` is uniform in [0, 1).
  RolloutArm Assign(int tier, double dice, double dice2);
  // A finished request (or a failed candidate attempt) of `arm`.
  void Record(const RolloutArm& arm, bool candidate, const ArmSample& sample);

  // Sends the shadow copy of `body` (the upstream body for the tier, with
  // its seed) to the candidate; the caller reports its own answer with
  // BaselineAnswer. `caller_row` is the caller's ledger row so far (tenant,
  // key, feature, request id).
  std::shared_ptr<ShadowPair> StartShadow(const RolloutArm& arm, const nlohmann::json& client_body,
                                          nlohmann::json upstream_body, bool chat,
                                          const std::string& request_id, const std::string& tenant,
                                          const std::string& key_name, const std::string& feature);
  // The baseline's answer text (ok=false when it failed: the pair is dropped).
  void BaselineAnswer(const std::shared_ptr<ShadowPair>& pair, bool ok, std::string text);

  // The admin API; `path` is one of those above.
  void HandleAdmin(http::Request&& req, std::shared_ptr<http::Responder> res);

  // Decisions on stage timers; call every tick.
  void Tick();
  // Health checks of the candidates' replicas (like the tiers').
  std::vector<std::shared_ptr<TierRuntime>> Candidates();
  // False while the database is unreachable (rollouts frozen).
  bool store_ok() const;
  // The last `n` decisions of every gateway, oldest first (the database's audit log).
  Expected<std::vector<nlohmann::json>> RecentAudit(int n) { return store_->Audit(n); }
  // GET /admin/rollouts's body: the running rollouts and the recent finished ones.
  nlohmann::json StatusJson();
  // Writes this gateway's samples, reads every rollout, takes the decisions
  // due and applies them (blocks on the database). At startup, so a gateway
  // started late routes by the running rollouts from its first request; then
  // on every sample and tick, on a database thread.
  void Sync();

 private:
  struct TierSlot;
  void Start(const nlohmann::json& body, const std::string& who,
             std::shared_ptr<http::Responder> res);
  void Operator(const nlohmann::json& body, bool promote, const std::string& who,
                http::Responder& res);
  nlohmann::json AuditEntry(const Rollout& r, const RolloutDecision& d, int64_t now_ms);
  void LocalAudit(const Rollout& r, const RolloutDecision& d, nlohmann::json entry);
  void ScheduleSync();
  // The candidate serving `rollout` now (null once it is over).
  std::shared_ptr<TierRuntime> CandidateOf(const std::shared_ptr<Rollout>& rollout);
  void Apply(std::vector<std::pair<StoredRollout, std::shared_ptr<Rollout>>>& current,
             const std::vector<StoredRollout>& finished);
  Expected<std::shared_ptr<Rollout>> Build(const StoredRollout& r, bool with_samples);
  Expected<std::shared_ptr<TierRuntime>> MakeCandidate(int tier, const RolloutSpec& spec);
  void AuditRefusal(const std::string& tier, const std::string& who, const std::string& why);
  void WriteAudit(nlohmann::json entry);
  void Judged(const std::shared_ptr<ShadowPair>& pair);
  Judge* JudgeFor();

  GatewayCore* core_;
  std::mutex mu_;
  std::vector<std::unique_ptr<TierSlot>> tiers_;  // one per tier, same order
  std::unique_ptr<RolloutStore> store_;
  std::vector<std::pair<std::string, StoredSample>> outbox_;  // samples not yet written
  std::mutex sync_mu_;
  std::atomic<bool> sync_scheduled_{false};
  std::atomic<bool> store_ok_{true};
  int64_t next_trim_ms_ = 0;  // guarded by sync_mu_
  std::mutex file_mu_;
  std::ofstream audit_file_;
  std::unique_ptr<Judge> judge_;
  bool judge_busy_ = false;    // an LLM judgement is out
  int64_t judge_skipped_ = 0;  // pairs not sent to the LLM judge because it was busy
};

}  // namespace brisk::gateway
