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
//   GET  /admin/audit              the audit log's recent entries
//
// Every decision (start, refusal at the gate, advance, promote, rollback,
// abort) is written to the audit log (rollout.audit_log, JSON lines): when,
// who (the admin key, or "auto"), what, and for automatic decisions the
// metric, its value and its limit.
//
// Threads: every method is thread-safe. Decisions are taken when a sample
// arrives (so a breach sends new requests to the baseline at once) and on a
// timer (stage durations).
#pragma once

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
  explicit RolloutManager(GatewayCore* core);
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

 private:
  struct TierSlot;
  void Start(const nlohmann::json& body, const std::string& who,
             std::shared_ptr<http::Responder> res);
  void Operator(const nlohmann::json& body, bool promote, const std::string& who,
                http::Responder& res);
  nlohmann::json StatusJson();
  void Audit(const Rollout& r, const RolloutDecision& d);
  void AuditRefusal(const std::string& tier, const std::string& who, const std::string& why);
  void WriteAudit(nlohmann::json entry);
  void Judged(const std::shared_ptr<ShadowPair>& pair);
  Judge* JudgeFor();

  GatewayCore* core_;
  std::mutex mu_;
  std::vector<std::unique_ptr<TierSlot>> tiers_;  // one per tier, same order
  std::deque<nlohmann::json> audit_;              // the last entries, for GET /admin/audit
  std::ofstream audit_file_;
  std::unique_ptr<Judge> judge_;
  bool judge_busy_ = false;    // an LLM judgement is out
  int64_t judge_skipped_ = 0;  // pairs not sent to the LLM judge because it was busy
  uint64_t next_id_ = 0;
};

}  // namespace brisk::gateway
