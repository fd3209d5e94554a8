#include "gateway/rollout_store.h"

#include <fmt/format.h>

#include <charconv>

namespace brisk::gateway {
namespace {

using Json = nlohmann::json;

constexpr const char* kCreateRollouts = R"sql(
CREATE TABLE IF NOT EXISTS brisk_rollouts (
  id TEXT PRIMARY KEY,
  tier TEXT NOT NULL,
  started_by TEXT NOT NULL,
  spec TEXT NOT NULL,
  started_ms BIGINT NOT NULL,
  stage TEXT NOT NULL,
  step INTEGER NOT NULL,
  stage_since_ms BIGINT NOT NULL,
  version BIGINT NOT NULL,
  finished INTEGER NOT NULL
))sql";
// One rollout not finished per tier, whichever gateway starts it.
constexpr const char* kCreateRolloutsActive =
    "CREATE UNIQUE INDEX IF NOT EXISTS brisk_rollouts_active ON brisk_rollouts (tier) "
    "WHERE finished = 0";
constexpr const char* kCreateRolloutSamples = R"sql(
CREATE TABLE IF NOT EXISTS brisk_rollout_samples (
  rollout_id TEXT NOT NULL,
  candidate INTEGER NOT NULL,
  judge INTEGER NOT NULL,
  time_ms BIGINT NOT NULL,
  status INTEGER NOT NULL,
  ttft_ms DOUBLE PRECISION NOT NULL,
  tpot_ms DOUBLE PRECISION NOT NULL,
  so_valid INTEGER NOT NULL,
  score DOUBLE PRECISION NOT NULL,
  inconsistent INTEGER NOT NULL
))sql";
constexpr const char* kCreateRolloutSamplesIndex =
    "CREATE INDEX IF NOT EXISTS brisk_rollout_samples_time ON brisk_rollout_samples "
    "(rollout_id, time_ms)";
// Keyed by the decision (rollout id and the version it made): written once.
constexpr const char* kCreateRolloutAudit = R"sql(
CREATE TABLE IF NOT EXISTS brisk_rollout_audit (
  id TEXT PRIMARY KEY,
  time_ms BIGINT NOT NULL,
  entry TEXT NOT NULL
))sql";
constexpr const char* kCreateRolloutAuditIndex =
    "CREATE INDEX IF NOT EXISTS brisk_rollout_audit_time ON brisk_rollout_audit (time_ms)";
constexpr const char* kRolloutSchemaLock = "SELECT pg_advisory_lock(7161726977)";
constexpr const char* kRolloutSchemaUnlock = "SELECT pg_advisory_unlock(7161726977)";

constexpr const char* kRolloutColumns =
    "id, tier, started_by, spec, started_ms, stage, step, stage_since_ms, version, finished";

Expected<StoredRollout> RolloutOfRow(const std::vector<std::string>& row) {
  StoredRollout r;
  r.id = row[0];
  r.tier = row[1];
  r.started_by = row[2];
  r.spec = Json::parse(row[3], nullptr, false);
  if (r.spec.is_discarded()) return DataLoss("rollout {}: its spec is not JSON", r.id);
  r.started_ms = SqlInt(row[4]);
  auto stage = StageOfName(row[5]);
  if (!stage) return DataLoss("rollout {}: unknown stage '{}'", r.id, row[5]);
  r.stage = *stage;
  r.step = static_cast<int>(SqlInt(row[6]));
  r.stage_since_ms = SqlInt(row[7]);
  r.version = SqlInt(row[8]);
  r.finished = SqlInt(row[9]) != 0;
  return r;
}

Expected<std::vector<StoredRollout>> Rollouts(SqlRows rows) {
  std::vector<StoredRollout> out;
  for (const auto& row : rows.rows) {
    ASSIGN_OR_RETURN(StoredRollout r, RolloutOfRow(row));
    out.push_back(std::move(r));
  }
  return out;
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

Expected<std::unique_ptr<RolloutStore>> RolloutStore::Open(std::unique_ptr<SqlDb> db) {
  const bool pg = db->postgres();
  if (pg) RETURN_IF_ERROR(db->Run(kRolloutSchemaLock).status());
  Status st = Status::Ok();
  for (const char* sql :
       {kCreateRollouts, kCreateRolloutsActive, kCreateRolloutSamples, kCreateRolloutSamplesIndex,
        kCreateRolloutAudit, kCreateRolloutAuditIndex}) {
    if (st.ok()) st = db->Run(sql).status();
  }
  if (pg) (void)db->Run(kRolloutSchemaUnlock);
  if (!st.ok()) return st.WithContext("creating the rollout tables");
  return std::unique_ptr<RolloutStore>(new RolloutStore(std::move(db)));
}

Status RolloutStore::Insert(const StoredRollout& r, const Json& audit_entry) {
  return db_->Transaction([&](SqlTx& tx) -> Status {
    // Serializes starts on one tier (PostgreSQL: the tier's active row, or
    // nothing to lock; the unique audit id catches a twin start either way).
    ASSIGN_OR_RETURN(SqlRows cur,
                     tx.Run(fmt::format("SELECT id, stage FROM brisk_rollouts WHERE tier = $1 AND "
                                        "finished = 0{}",
                                        tx.ForUpdate()),
                            {r.tier}));
    if (!cur.rows.empty()) {
      return InvalidArgument("tier '{}' has rollout {} ({}); abort it first", r.tier,
                             cur.rows[0][0], cur.rows[0][1]);
    }
    RETURN_IF_ERROR(
        tx.Run(fmt::format("INSERT INTO brisk_rollouts ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, "
                           "$8, $9, $10)",
                           kRolloutColumns),
               {r.id, r.tier, r.started_by, Dump(r.spec), r.started_ms,
                std::string(StageName(r.stage)), int64_t{r.step}, r.stage_since_ms, r.version,
                int64_t{r.finished ? 1 : 0}})
            .status());
    return tx
        .Run("INSERT INTO brisk_rollout_audit (id, time_ms, entry) VALUES ($1, $2, $3)",
             {fmt::format("{}:{}", r.id, r.version), r.started_ms, Dump(audit_entry)})
        .status();
  });
}

Expected<bool> RolloutStore::Decide(const StoredRollout& next, const Json& audit_entry) {
  bool won = false;
  Status st = db_->Transaction([&](SqlTx& tx) -> Status {
    won = false;
    ASSIGN_OR_RETURN(
        SqlRows u,
        tx.Run("UPDATE brisk_rollouts SET stage = $1, step = $2, stage_since_ms = $3, "
               "version = $4, finished = $5 WHERE id = $6 AND version = $7",
               {std::string(StageName(next.stage)), int64_t{next.step}, next.stage_since_ms,
                next.version, int64_t{next.finished ? 1 : 0}, next.id, next.version - 1}));
    if (u.changed == 0) return Status::Ok();  // another gateway decided first
    won = true;
    return tx
        .Run("INSERT INTO brisk_rollout_audit (id, time_ms, entry) VALUES ($1, $2, $3)",
             {fmt::format("{}:{}", next.id, next.version), next.stage_since_ms, Dump(audit_entry)})
        .status();
  });
  if (!st.ok()) return st;
  return won;
}

Status RolloutStore::AuditAlone(const Json& entry, int64_t time_ms) {
  return db_
      ->Run("INSERT INTO brisk_rollout_audit (id, time_ms, entry) VALUES ($1, $2, $3)",
            {fmt::format("refused:{}:{}", time_ms, std::hash<std::string>{}(Dump(entry))), time_ms,
             Dump(entry)})
      .status();
}

Expected<std::vector<StoredRollout>> RolloutStore::Active() {
  ASSIGN_OR_RETURN(SqlRows rows,
                   db_->Run(fmt::format("SELECT {} FROM brisk_rollouts WHERE finished = 0 ORDER BY "
                                        "started_ms",
                                        kRolloutColumns)));
  return Rollouts(std::move(rows));
}

Expected<std::vector<StoredRollout>> RolloutStore::Finished(int recent) {
  ASSIGN_OR_RETURN(SqlRows rows, db_->Run(fmt::format("SELECT {} FROM brisk_rollouts WHERE "
                                                      "finished = 1 ORDER BY started_ms DESC "
                                                      "LIMIT $1",
                                                      kRolloutColumns),
                                          {int64_t{recent}}));
  return Rollouts(std::move(rows));
}

Status RolloutStore::AddSamples(const std::string& rollout_id,
                                std::span<const StoredSample> samples) {
  if (samples.empty()) return Status::Ok();
  return db_->Transaction([&](SqlTx& tx) -> Status {
    for (const StoredSample& s : samples) {
      RETURN_IF_ERROR(tx.Run("INSERT INTO brisk_rollout_samples (rollout_id, candidate, judge, "
                             "time_ms, status, ttft_ms, tpot_ms, so_valid, score, inconsistent) "
                             "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                             {rollout_id, int64_t{s.candidate ? 1 : 0}, int64_t{s.judge ? 1 : 0},
                              s.time_ms, int64_t{s.status}, s.ttft_ms, s.tpot_ms,
                              int64_t{s.so_valid}, s.score, int64_t{s.inconsistent ? 1 : 0}})
                          .status());
    }
    return Status::Ok();
  });
}

Expected<std::vector<StoredSample>> RolloutStore::Samples(const std::string& rollout_id,
                                                          int64_t since_ms) {
  ASSIGN_OR_RETURN(SqlRows rows,
                   db_->Run("SELECT candidate, time_ms, status, ttft_ms, tpot_ms, so_valid FROM "
                            "brisk_rollout_samples WHERE rollout_id = $1 AND judge = 0 AND "
                            "time_ms >= $2 ORDER BY time_ms",
                            {rollout_id, since_ms}));
  std::vector<StoredSample> out;
  out.reserve(rows.rows.size());
  for (const auto& row : rows.rows) {
    StoredSample s;
    s.candidate = SqlInt(row[0]) != 0;
    s.time_ms = SqlInt(row[1]);
    s.status = static_cast<int>(SqlInt(row[2]));
    s.ttft_ms = SqlDouble(row[3]);
    s.tpot_ms = SqlDouble(row[4]);
    s.so_valid = static_cast<int>(SqlInt(row[5]));
    out.push_back(s);
  }
  return out;
}

Expected<JudgeTotals> RolloutStore::Judged(const std::string& rollout_id, int64_t stage_since_ms) {
  ASSIGN_OR_RETURN(
      SqlRows rows,
      db_->Run("SELECT COUNT(*), COALESCE(SUM(score), 0), COALESCE(SUM(inconsistent), 0), "
               "COALESCE(SUM(CASE WHEN time_ms >= $2 THEN 1 ELSE 0 END), 0) "
               "FROM brisk_rollout_samples WHERE rollout_id = $1 AND judge = 1",
               {rollout_id, stage_since_ms}));
  JudgeTotals t;
  if (rows.rows.empty()) return t;
  t.judged = SqlInt(rows.rows[0][0]);
  t.score_sum = SqlDouble(rows.rows[0][1]);
  t.inconsistent = SqlInt(rows.rows[0][2]);
  t.stage_pairs = SqlInt(rows.rows[0][3]);
  return t;
}

Expected<std::vector<Json>> RolloutStore::Audit(int limit) {
  ASSIGN_OR_RETURN(SqlRows rows, db_->Run("SELECT entry FROM brisk_rollout_audit ORDER BY "
                                          "time_ms DESC, id DESC LIMIT $1",
                                          {int64_t{limit}}));
  std::vector<Json> out;
  for (auto it = rows.rows.rbegin(); it != rows.rows.rend(); ++it) {
    Json e = Json::parse((*it)[0], nullptr, false);
    if (!e.is_discarded()) out.push_back(std::move(e));
  }
  return out;
}

Status RolloutStore::Trim(int64_t before_ms) {
  return db_->Run("DELETE FROM brisk_rollout_samples WHERE time_ms < $1", {before_ms}).status();
}

}  // namespace brisk::gateway
