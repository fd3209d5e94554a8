// The shared record of rollouts (gateway/rollout_manager.h), in the ledger's
// database, so that any number of gateways run one rollout per tier
// together:
//   - the rollout itself (spec, stage, step, when the stage began) with a
//     version: a decision is written only if the version is still the one
//     it was taken on, so each decision is taken exactly once, by whichever
//     gateway wins; its audit entry is written in the same transaction;
//   - every gateway's samples (finished requests of each arm, judge scores),
//     so thresholds compare the arms over the fleet's traffic;
//   - the audit log.
// Times are wall-clock milliseconds (the gateways' clocks: keep them in
// NTP). Thread-safe; every call blocks on the database.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gateway/rollout.h"
#include "gateway/sql_db.h"
#include "util/status.h"

namespace brisk::gateway {

struct StoredRollout {
  std::string id;
  std::string tier;
  std::string started_by;
  nlohmann::json spec;  // RolloutSpecJson
  int64_t started_ms = 0;
  RolloutStage stage = RolloutStage::kShadow;
  int step = -1;
  int64_t stage_since_ms = 0;
  int64_t version = 0;
  bool finished = false;
};

// One arm sample or one judge score, as every gateway writes them.
struct StoredSample {
  bool candidate = false;
  bool judge = false;  // a judge score (score, inconsistent) rather than a request
  int64_t time_ms = 0;
  int status = 200;
  double ttft_ms = -1;
  double tpot_ms = -1;
  int so_valid = -1;
  double score = 0;
  bool inconsistent = false;
};

struct JudgeTotals {
  int64_t judged = 0;
  double score_sum = 0;
  int64_t inconsistent = 0;
  int64_t stage_pairs = 0;  // judged since the stage began
};

class RolloutStore {
 public:
  static Expected<std::unique_ptr<RolloutStore>> Open(std::unique_ptr<SqlDb> db);

  // Inserts a new rollout with its "start" audit entry, unless its tier has
  // one that is not finished: kInvalidArgument naming it.
  Status Insert(const StoredRollout& r, const nlohmann::json& audit_entry);
  // Writes `next` (stage, step, stage_since_ms, finished) and its audit
  // entry if the rollout is still at `next.version - 1`; false when another
  // gateway decided first (nothing written).
  Expected<bool> Decide(const StoredRollout& next, const nlohmann::json& audit_entry);
  // An audit entry of no rollout (a start refused at the gate).
  Status AuditAlone(const nlohmann::json& entry, int64_t time_ms);

  // Rollouts not finished, and the `recent` finished ones (newest first).
  Expected<std::vector<StoredRollout>> Active();
  Expected<std::vector<StoredRollout>> Finished(int recent);

  Status AddSamples(const std::string& rollout_id, std::span<const StoredSample> samples);
  // The request samples since `since_ms`, oldest first.
  Expected<std::vector<StoredSample>> Samples(const std::string& rollout_id, int64_t since_ms);
  Expected<JudgeTotals> Judged(const std::string& rollout_id, int64_t stage_since_ms);
  // The last `limit` audit entries, oldest first.
  Expected<std::vector<nlohmann::json>> Audit(int limit);
  // Drops samples older than `before_ms` (every rollout's).
  Status Trim(int64_t before_ms);

  bool postgres() const { return db_->postgres(); }

 private:
  explicit RolloutStore(std::unique_ptr<SqlDb> db) : db_(std::move(db)) {}
  std::unique_ptr<SqlDb> db_;
};

}  // namespace brisk::gateway
