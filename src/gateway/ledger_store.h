// The storage behind a Ledger (internal to the gateway's ledger files). The
// group-commit writer in ledger.cc drives one LedgerStore: InsertBatch() from
// its writer thread, the reads from any thread. SQLite and PostgreSQL
// implement it with the same table and the same SQL shape.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gateway/ledger.h"
#include "util/status.h"

namespace brisk::gateway {

class LedgerStore {
 public:
  virtual ~LedgerStore() = default;
  // Inserts `rows` in ONE transaction; a row whose request_id is already
  // present is skipped (not an error). All or nothing: on error nothing of
  // the batch is committed. Called from one thread at a time.
  virtual Status InsertBatch(std::span<const LedgerRow> rows) = 0;
  // Thread-safe reads of what is committed.
  virtual Expected<std::vector<CostGroup>> Query(const CostQuery& q) = 0;
  virtual Expected<double> SpendSince(const std::string& name, bool by_feature,
                                      int64_t since_unix_ms) = 0;
  virtual Expected<int64_t> CountRows() = 0;
  virtual const char* kind() const = 0;
};

// `path` is a file path (already stripped of "sqlite://"). kReadWrite creates
// the file and the table if missing; kReadOnly requires both.
Expected<std::unique_ptr<LedgerStore>> OpenSqliteStore(const std::string& path, LedgerMode mode);
// `url` is a libpq connection URI ("postgresql://..." or "postgres://...").
Expected<std::unique_ptr<LedgerStore>> OpenPostgresStore(const std::string& url, LedgerMode mode);

// The Ledger of OpenLedger(kReadWrite): the group-commit writer thread over
// `store` (exposed for tests with a fake store).
std::unique_ptr<Ledger> NewGroupCommitLedger(std::unique_ptr<LedgerStore> store,
                                             std::string spool_path = "");

// The table both stores hold: the columns in LedgerRow order, so that the
// stores bind parameters in the same order. `request_id` is UNIQUE. Columns
// added after the first version (shadow, rollout) are at the end, have
// defaults, and are added to an older table on open.
inline constexpr const char* kLedgerColumns[] = {
    "time_unix_ms",  "request_id",    "tenant",        "api_key_name",
    "feature",       "tier",          "upstream",      "model",
    "endpoint",      "prompt_tokens", "cached_tokens", "completion_tokens",
    "cost_usd",      "status",        "outcome",       "stream",
    "ttft_ms",       "total_ms",      "attempts",      "escalations",
    "finish_reason", "shadow",        "rollout"};
inline constexpr int kLedgerColumnCount = sizeof(kLedgerColumns) / sizeof(kLedgerColumns[0]);

// "INSERT INTO brisk_ledger (cols) VALUES (<p1..p23>), ... ON CONFLICT
// (request_id) DO NOTHING" for `rows` rows; placeholders are "?N" (SQLite) or
// "$N" (PostgreSQL), numbered from 1. Values are always bound, never pasted.
std::string InsertSql(int rows, char placeholder);

// The rollup: SELECT key[, day number], count, sums ... GROUP BY ... with the
// time range bound as parameters 1 (from, inclusive) and 2 (to, exclusive),
// q.tenant's condition (tenant = parameter 3) and q.shadow's condition on
// the shadow column. Result columns: key, day
// (days since 1970-01-01 UTC; only when q.by_day), requests, prompt, cached,
// completion, cost, escalations. `has_shadow_columns` false: a table of an
// older version opened read-only, where every row is a caller's and no row
// has a rollout (GroupBy::kRollout groups everything under "").
std::string RollupSql(const CostQuery& q, char placeholder, bool has_shadow_columns = true);
// SELECT COALESCE(SUM(cost_usd), 0) ... WHERE <name column> = p1 AND time >= p2,
// shadow rows left out.
std::string SpendSql(bool by_feature, char placeholder, bool has_shadow_columns = true);

// "YYYY-MM-DD" of a day number (days since 1970-01-01).
std::string DayString(int64_t days_since_epoch);
// Sorts groups by day, then key, bytewise (the stores' collations differ).
void SortGroups(std::vector<CostGroup>* groups);

}  // namespace brisk::gateway
