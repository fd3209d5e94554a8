#include "gateway/shared_responses.h"

#include <charconv>

namespace brisk::gateway {
namespace {

// One statement per Run (libpq runs one per call). BIGINT and TEXT mean the
// same on both databases.
constexpr const char* kCreateResponsesTable = R"sql(
CREATE TABLE IF NOT EXISTS brisk_responses (
  tenant TEXT NOT NULL,
  id TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL,
  bytes BIGINT NOT NULL,
  response TEXT NOT NULL,
  input_items TEXT NOT NULL,
  conversation TEXT NOT NULL,
  PRIMARY KEY (tenant, id)
))sql";
constexpr const char* kCreateResponsesIndex =
    "CREATE INDEX IF NOT EXISTS brisk_responses_age ON brisk_responses (tenant, created_ms)";
// CREATE ... IF NOT EXISTS is not safe against a twin running at the same time on PostgreSQL.
constexpr const char* kResponsesSchemaLock = "SELECT pg_advisory_lock(7161726975)";
constexpr const char* kResponsesSchemaUnlock = "SELECT pg_advisory_unlock(7161726975)";

constexpr const char* kUpsertResponse = R"sql(
INSERT INTO brisk_responses (tenant, id, created_ms, expires_ms, bytes, response, input_items,
                             conversation)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (tenant, id) DO UPDATE SET created_ms = excluded.created_ms,
  expires_ms = excluded.expires_ms, bytes = excluded.bytes, response = excluded.response,
  input_items = excluded.input_items, conversation = excluded.conversation)sql";

// The tenant's entries past either bound (newest first: the row number and
// the running byte total), and its expired ones.
constexpr const char* kEvictResponses = R"sql(
DELETE FROM brisk_responses WHERE tenant = $1 AND (expires_ms <= $2 OR id IN (
  SELECT id FROM (
    SELECT id,
           ROW_NUMBER() OVER (ORDER BY created_ms DESC, id DESC) AS n,
           SUM(bytes) OVER (ORDER BY created_ms DESC, id DESC ROWS UNBOUNDED PRECEDING) AS total
    FROM brisk_responses WHERE tenant = $1) ranked
  WHERE n > $3 OR total > $4)))sql";

constexpr const char* kSweepResponses = "DELETE FROM brisk_responses WHERE expires_ms <= $1";
constexpr int64_t kSweepEveryMs = 60'000;

constexpr const char* kGetResponse =
    "SELECT response, input_items, conversation FROM brisk_responses "
    "WHERE tenant = $1 AND id = $2 AND expires_ms > $3";
constexpr const char* kEraseResponse = "DELETE FROM brisk_responses WHERE tenant = $1 AND id = $2";
constexpr const char* kResponsesUsage =
    "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM brisk_responses WHERE tenant = $1";

}  // namespace

Expected<std::unique_ptr<SharedResponseStore>> SharedResponseStore::Open(
    std::unique_ptr<SqlDb> db, ResponseStoreLimits limits) {
  const bool pg = db->postgres();
  if (pg) RETURN_IF_ERROR(db->Run(kResponsesSchemaLock).status());
  Status st = db->Run(kCreateResponsesTable).status();
  if (st.ok()) st = db->Run(kCreateResponsesIndex).status();
  if (pg) (void)db->Run(kResponsesSchemaUnlock);
  if (!st.ok()) return st.WithContext("creating the brisk_responses table");
  return std::unique_ptr<SharedResponseStore>(new SharedResponseStore(std::move(db), limits));
}

Status SharedResponseStore::Put(const std::string& tenant, const std::string& id,
                                const StoredResponseText& text, int64_t now_ms) {
  const int64_t bytes = static_cast<int64_t>(text.response.size() + text.input_items.size() +
                                             text.conversation.size());
  if (bytes > limits_.max_bytes) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("response {} is {} bytes with its conversation, more than the "
                              "store's {} bytes per tenant; not stored",
                              id, bytes, limits_.max_bytes));
  }
  RETURN_IF_ERROR(
      db_->Run(kUpsertResponse, {tenant, id, now_ms, now_ms + limits_.ttl_s * 1000, bytes,
                                 text.response, text.input_items, text.conversation})
          .status());
  RETURN_IF_ERROR(
      db_->Run(kEvictResponses, {tenant, now_ms, limits_.max_entries, limits_.max_bytes}).status());
  int64_t due = next_sweep_ms_.load();
  if (now_ms >= due && next_sweep_ms_.compare_exchange_strong(due, now_ms + kSweepEveryMs)) {
    RETURN_IF_ERROR(db_->Run(kSweepResponses, {now_ms}).status());
  }
  return Status::Ok();
}

Expected<std::optional<StoredResponseText>> SharedResponseStore::Get(const std::string& tenant,
                                                                     const std::string& id,
                                                                     int64_t now_ms) {
  ASSIGN_OR_RETURN(SqlRows r, db_->Run(kGetResponse, {tenant, id, now_ms}));
  if (r.rows.empty()) return std::optional<StoredResponseText>();
  auto& row = r.rows[0];
  return std::optional<StoredResponseText>(
      StoredResponseText{std::move(row[0]), std::move(row[1]), std::move(row[2])});
}

Expected<bool> SharedResponseStore::Erase(const std::string& tenant, const std::string& id) {
  ASSIGN_OR_RETURN(SqlRows r, db_->Run(kEraseResponse, {tenant, id}));
  return r.changed > 0;
}

Expected<std::pair<int64_t, int64_t>> SharedResponseStore::Usage(const std::string& tenant) {
  ASSIGN_OR_RETURN(SqlRows r, db_->Run(kResponsesUsage, {tenant}));
  if (r.rows.empty()) return std::pair<int64_t, int64_t>{0, 0};
  return std::pair<int64_t, int64_t>{SqlInt(r.rows[0][0]), SqlInt(r.rows[0][1])};
}

}  // namespace brisk::gateway
