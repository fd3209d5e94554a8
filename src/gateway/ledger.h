// The cost ledger: one row per request that reached the gateway's routing,
// written exactly once, whatever happened to the request (completed, streamed,
// cancelled by the client, retried on another replica, escalated to a larger
// tier, refused with 429 or a budget, failed upstream).
//
// Writes leave the request path: Append() queues the row and returns; a
// writer thread commits queued rows in one transaction (group commit) and
// then calls each row's `durable` callback. The gateway completes a response
// only after that callback, so a response the client saw complete has a row
// on disk even if the gateway is killed right after.
//
// Stores: SQLite (the embedded default: "sqlite:///path/ledger.db" or a plain
// path; WAL, synchronous=FULL) and PostgreSQL ("postgresql://..." or
// "postgres://...", libpq). Both hold the same table, `brisk_ledger`, created
// on open if missing; a table of an older version gains the newer columns
// (ALTER TABLE ... ADD COLUMN with their defaults) when opened read-write.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/cost.h"
#include "util/status.h"

namespace brisk::gateway {

struct LedgerRow {
  int64_t time_unix_ms = 0;  // when the request arrived at the gateway
  std::string request_id;    // the gateway's id (x-request-id), unique
  std::string tenant;        // from the API key ("" when keys are off)
  std::string api_key_name;  // the key's configured name, never the secret ("" when none)
  std::string feature;       // from the key or X-Feature ("" when none)
  std::string tier;          // tier that produced the answer (the last attempt's)
  std::string upstream;      // replica that produced the answer ("" when none was tried)
  std::string model;         // model id the client asked for
  std::string endpoint;      // "chat.completions" | "completions"
  TokenCounts tokens;        // summed over every attempt (escalations and retries included)
  double cost_usd = 0;       // summed over every attempt, each at its own tier's prices
  int status = 0;            // HTTP status the client got (499: client went away)
  std::string outcome;       // "completed" | "cancelled" | "error" | "rejected" | "budget"
  bool stream = false;
  double ttft_ms = -1;  // -1 when no token was sent
  double total_ms = 0;
  int32_t attempts = 1;       // upstream attempts (retries + escalations + 1); 0 if none
  int32_t escalations = 0;    // cascade steps to a larger tier
  std::string finish_reason;  // of the answer's first choice ("" when none)
  // A shadow copy of a caller's request sent to a rollout's candidate (its
  // request_id is the caller's + "-shadow"): it carries the caller's tenant, key and feature
  // and the candidate's tokens and cost (what the shadow cost the operator),
  // but the caller is never billed for it: rollups leave it out unless asked
  // (CostQuery::shadow) and budgets never count it.
  bool shadow = false;
  // The rollout that sent this row's traffic ("" when none): set on shadow
  // rows and on the caller's own rows served by a canary candidate.
  std::string rollout;
};

// One group of a rollup: the key (a feature, tier or tenant; the day when
// grouped by day too) and its sums.
struct CostGroup {
  std::string key;
  std::string day;  // "YYYY-MM-DD" (UTC) when grouped by day, else ""
  int64_t requests = 0;
  TokenCounts tokens;
  double cost_usd = 0;
  int64_t escalations = 0;
};

enum class GroupBy { kFeature, kTier, kTenant, kRollout };

// Which rows a rollup sums: callers' rows only (the bill), both, or only the
// shadow rows (what shadow traffic cost the operator).
enum class ShadowFilter { kExclude, kInclude, kOnly };

struct CostQuery {
  GroupBy group_by = GroupBy::kFeature;
  int64_t from_unix_ms = 0;        // inclusive
  int64_t to_unix_ms = INT64_MAX;  // exclusive
  bool by_day = false;             // also group by UTC day
  ShadowFilter shadow = ShadowFilter::kExclude;
  std::optional<std::string> tenant;  // only this tenant's rows; nullopt = every tenant's
};

// Counters of the writer thread since the ledger was opened.
struct LedgerStats {
  int64_t rows_appended = 0;   // Append() calls
  int64_t rows_committed = 0;  // rows whose transaction committed (duplicates included)
  int64_t rows_failed = 0;     // rows lost: their transaction failed (logged)
  int64_t transactions = 0;    // committed transactions (one per batch when all goes well)
  int64_t rows_spooled = 0;    // rows written to the local spool while the database was away
  int64_t rows_unspooled = 0;  // spooled rows since written to the database
  int64_t spool_rows = 0;      // rows in the spool now
};

// Most rows the writer commits in one transaction.
inline constexpr int kLedgerMaxBatchRows = 4096;

// Called once per row on the writer thread after its transaction committed
// (ok) or failed (the error; the row is then lost and logged). Must not block
// and must not call Flush() (it would wait for itself); Append() is fine.
using DurableCallback = std::function<void(const Status&)>;

class Ledger {
 public:
  virtual ~Ledger() = default;
  // Thread-safe, never blocks on I/O. Rows are committed in batches of
  // whatever is queued when the writer wakes (at most kLedgerMaxBatchRows).
  // Text fields are stored as valid UTF-8 (ill-formed bytes and NULs become
  // U+FFFD); a non-finite cost is stored as 0. A row whose request_id is
  // already in the table is not written again, and that is not an error.
  virtual void Append(LedgerRow row, DurableCallback durable) = 0;
  // Waits until every row appended before the call is committed (or failed)
  // and its callback has returned.
  virtual void Flush() = 0;
  // Thread-safe; reads what is committed. Groups come sorted by day, then by
  // key (bytewise); rows without the key (e.g. no feature) group under "".
  virtual Expected<std::vector<CostGroup>> Query(const CostQuery& q) = 0;
  // Spend of rows with this key name (or feature, when `by_feature`), from
  // `since_unix_ms` on, shadow rows never included; for budgets at start-up.
  virtual Expected<double> SpendSince(const std::string& name, bool by_feature,
                                      int64_t since_unix_ms) = 0;
  // Rows in the table, in total (tests and /metrics).
  virtual Expected<int64_t> CountRows() = 0;
  // What this process's writer did so far (/metrics, tests).
  virtual LedgerStats Stats() const = 0;
  // "sqlite" | "postgresql"
  virtual const char* kind() const = 0;
};

// How a ledger is opened. kReadWrite (the gateway) creates the SQLite file and
// the table if missing and starts the writer thread. kReadOnly (`brisk cost`)
// requires an existing ledger, creates and writes nothing, starts no thread:
// Append() calls the row's callback at once with an error.
enum class LedgerMode { kReadWrite, kReadOnly };

// "sqlite:///abs/path.db", "sqlite://rel/path.db", a plain path (SQLite), or
// "postgresql://user@host:port/db" / "postgres://..." (libpq conninfo URIs).
// Opens (creating the file or table if missing) and starts the writer thread.
// Errors name the ledger with its password redacted (RedactLedgerUrl).
//
// `spool_path` (read-write only; "" = none): when the database cannot be
// reached (PostgreSQL down, a cut link), a batch is appended to this local
// file instead, fsynced before its callbacks run, so a response still
// completes only once its row is durable; the writer writes the spooled rows
// to the database once it is back (every second it tries; a row already
// there is skipped by request_id, so each row lands once), then empties the
// file. Rows spooled by an earlier process (it was killed) go in at start.
Expected<std::unique_ptr<Ledger>> OpenLedger(const std::string& url,
                                             LedgerMode mode = LedgerMode::kReadWrite,
                                             const std::string& spool_path = "");

// `url` safe to log: the password of a URI ("postgresql://u:secret@h/db")
// and any "password=" parameter become "***".
std::string RedactLedgerUrl(std::string_view url);

}  // namespace brisk::gateway
