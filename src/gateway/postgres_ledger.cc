// The PostgreSQL ledger store (libpq), for several gateways sharing one
// ledger. One connection writes (the writer thread), another reads. Values
// always travel as parameters, never inside the SQL text. A connection found
// broken is re-opened before the next batch; a batch that fails because the
// connection broke under it is tried once more on a new connection (safe:
// rows already committed are skipped by request_id).
#include <libpq-fe.h>

#include <charconv>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "gateway/ledger_store.h"
#include "util/log.h"

namespace brisk::gateway {
namespace {

// Rows per INSERT statement: 256 x 23 parameters, well under the protocol's
// 65535. Full chunks use a statement prepared once per connection.
constexpr int kRowsPerStatement = 256;
constexpr const char* kInsertStatementName = "brisk_ledger_insert";
// Serializes table creation between gateways starting together (CREATE TABLE
// IF NOT EXISTS is not safe against a concurrent twin).
constexpr const char* kSchemaLock = "SELECT pg_advisory_xact_lock(7161726973)";

constexpr const char* kCreateTable = R"sql(
CREATE TABLE IF NOT EXISTS brisk_ledger (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  time_unix_ms BIGINT NOT NULL,
  request_id TEXT NOT NULL UNIQUE,
  tenant TEXT NOT NULL,
  api_key_name TEXT NOT NULL,
  feature TEXT NOT NULL,
  tier TEXT NOT NULL,
  upstream TEXT NOT NULL,
  model TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  cached_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  cost_usd DOUBLE PRECISION NOT NULL,
  status INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  stream BOOLEAN NOT NULL,
  ttft_ms DOUBLE PRECISION NOT NULL,
  total_ms DOUBLE PRECISION NOT NULL,
  attempts INTEGER NOT NULL,
  escalations INTEGER NOT NULL,
  finish_reason TEXT NOT NULL,
  shadow BOOLEAN NOT NULL DEFAULT false,
  rollout TEXT NOT NULL DEFAULT ''
))sql";
constexpr const char* kCreateIndex =
    "CREATE INDEX IF NOT EXISTS brisk_ledger_time ON brisk_ledger (time_unix_ms)";
// Columns added after the first version, with their definitions: a table an
// older gateway created gains them on open (its rows then read as callers'
// rows outside any rollout). Only missing ones are added: ALTER TABLE takes
// an exclusive lock that would stall the other gateways' writers.
constexpr std::pair<const char*, const char*> kAddedColumns[] = {
    {"shadow", "BOOLEAN NOT NULL DEFAULT false"},
    {"rollout", "TEXT NOT NULL DEFAULT ''"},
};
constexpr const char* kColumnsSql =
    "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass('brisk_ledger') AND "
    "attnum > 0 AND NOT attisdropped";

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// libpq's messages end in newlines and indent their hints with tabs.
std::string OneLine(const char* message) {
  std::string s = message ? message : "";
  for (char& c : s) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  std::string out;
  for (char c : s) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

class PgConnection {
 public:
  PgConnection(std::string url, LedgerMode mode) : url_(std::move(url)), mode_(mode) {}
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;
  ~PgConnection() {
    if (conn_) PQfinish(conn_);
  }

  bool ok() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }

  // (Re)opens the connection. The URL's own settings win over the defaults
  // before it; the encoding after it is forced (rows are UTF-8).
  Status Connect() {
    if (conn_) PQfinish(conn_);
    prepared_ = false;
    // Bounded as the gateway's other connections are (sql_db.cc): a cut link
    // fails the commit in seconds, and its rows go to the spool.
    const char* keys[] = {"connect_timeout",
                          "keepalives",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "tcp_user_timeout",
                          "application_name",
                          "options",
                          "dbname",
                          "client_encoding",
                          nullptr};
    const char* values[] = {
        "5",
        "1",
        "5",
        "1",
        "3",
        "5000",
        "brisk-ledger",
        mode_ == LedgerMode::kReadOnly
            ? "-c default_transaction_read_only=on -c statement_timeout=30000"
            : "-c statement_timeout=10000 -c idle_in_transaction_session_timeout=10000",
        url_.c_str(),
        "UTF8",
        nullptr};
    conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
    if (!conn_) return Internal("out of memory connecting to PostgreSQL");
    // NOTICEs ("relation already exists, skipping") go to the debug log, not stderr.
    PQsetNoticeProcessor(
        conn_, [](void*, const char* message) { log::Debug("postgresql: {}", OneLine(message)); },
        nullptr);
    if (PQstatus(conn_) != CONNECTION_OK) {
      return Status(StatusCode::kUnavailable,
                    fmt::format("cannot connect to PostgreSQL ledger '{}': {}",
                                RedactLedgerUrl(url_), OneLine(PQerrorMessage(conn_))));
    }
    return Status::Ok();
  }

  // Runs `sql` with text parameters; ok for PGRES_COMMAND_OK / TUPLES_OK.
  Expected<Result> Exec(const char* sql, int n_params = 0, const char* const* params = nullptr) {
    Result r(PQexecParams(conn_, sql, n_params, nullptr, params, nullptr, nullptr, 0));
    return Check(std::move(r));
  }

  Expected<Result> ExecPrepared(const char* name, int n_params, const char* const* params) {
    Result r(PQexecPrepared(conn_, name, n_params, params, nullptr, nullptr, 0));
    return Check(std::move(r));
  }

  Status Prepare(const char* name, const std::string& sql) {
    Result r(PQprepare(conn_, name, sql.c_str(), 0, nullptr));
    auto checked = Check(std::move(r));
    return checked.ok() ? Status::Ok() : checked.status();
  }

  // Ends a failed transaction, when the connection still stands.
  void Rollback() {
    if (ok() && PQtransactionStatus(conn_) != PQTRANS_IDLE) Result r(PQexec(conn_, "ROLLBACK"));
  }

  const std::string& url() const { return url_; }
  bool prepared() const { return prepared_; }
  void set_prepared() { prepared_ = true; }

 private:
  Expected<Result> Check(Result r) {
    const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    const std::string message = OneLine(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_));
    if (!ok()) {
      return Status(StatusCode::kUnavailable,
                    fmt::format("lost connection to PostgreSQL ledger '{}': {}",
                                RedactLedgerUrl(url_), message));
    }
    const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
    const std::string_view sqlstate = state ? state : "";
    StatusCode code = StatusCode::kInternal;
    if (sqlstate.starts_with("22") || sqlstate.starts_with("23")) {
      code = StatusCode::kInvalidArgument;  // a bad value in a row
    } else if (sqlstate.starts_with("53")) {
      code = StatusCode::kResourceExhausted;  // disk full, out of memory, too many connections
    } else if (sqlstate.starts_with("08") || sqlstate.starts_with("57")) {
      code = StatusCode::kUnavailable;  // connection trouble, shutting down
    } else if (sqlstate == "42P01") {
      code = StatusCode::kNotFound;
    }
    return Status(code, fmt::format("PostgreSQL ledger '{}': {}", RedactLedgerUrl(url_), message));
  }

  std::string url_;
  LedgerMode mode_;
  PGconn* conn_ = nullptr;
  bool prepared_ = false;
};

void AppendParams(const LedgerRow& r, std::vector<std::string>* v) {
  auto num = [&](auto x) { v->push_back(fmt::format("{}", x)); };
  num(r.time_unix_ms);
  v->push_back(r.request_id);
  v->push_back(r.tenant);
  v->push_back(r.api_key_name);
  v->push_back(r.feature);
  v->push_back(r.tier);
  v->push_back(r.upstream);
  v->push_back(r.model);
  v->push_back(r.endpoint);
  num(r.tokens.prompt);
  num(r.tokens.cached);
  num(r.tokens.output);
  num(r.cost_usd);  // shortest form that reads back to the same double
  num(r.status);
  v->push_back(r.outcome);
  v->push_back(r.stream ? "true" : "false");
  num(r.ttft_ms);
  num(r.total_ms);
  num(r.attempts);
  num(r.escalations);
  v->push_back(r.finish_reason);
  v->push_back(r.shadow ? "true" : "false");
  v->push_back(r.rollout);
}

int64_t Int64At(PGresult* r, int row, int col) {
  const char* s = PQgetvalue(r, row, col);
  int64_t v = 0;
  std::from_chars(s, s + std::char_traits<char>::length(s), v);
  return v;
}

double DoubleAt(PGresult* r, int row, int col) {
  const char* s = PQgetvalue(r, row, col);
  double v = 0;
  std::from_chars(s, s + std::char_traits<char>::length(s), v);
  return v;
}

class PostgresStore final : public LedgerStore {
 public:
  PostgresStore(const std::string& url, LedgerMode mode)
      : mode_(mode), writer_(url, mode), reader_(url, mode) {}

  Status Open() {
    RETURN_IF_ERROR(reader_.Connect());
    if (mode_ == LedgerMode::kReadOnly) {
      ASSIGN_OR_RETURN(Result r, reader_.Exec("SELECT to_regclass('brisk_ledger') IS NOT NULL"));
      if (std::string_view(PQgetvalue(r.get(), 0, 0)) != "t") {
        return NotFound("PostgreSQL ledger '{}' has no brisk_ledger table (the gateway creates it)",
                        RedactLedgerUrl(reader_.url()));
      }
      // An older table is read as it is (brisk cost writes nothing).
      ASSIGN_OR_RETURN(const std::set<std::string> columns, Columns(reader_));
      has_shadow_columns_ = columns.count("shadow") && columns.count("rollout");
      return Status::Ok();
    }
    RETURN_IF_ERROR(writer_.Connect());
    Status st = CreateOrUpgradeTable();
    if (!st.ok()) {
      writer_.Rollback();
      return st.WithContext("creating or upgrading the brisk_ledger table");
    }
    return Status::Ok();
  }

  Status InsertBatch(std::span<const LedgerRow> rows) override {
    std::lock_guard lock(write_mu_);
    if (mode_ == LedgerMode::kReadOnly) {
      return Status(StatusCode::kUnimplemented, "PostgreSQL ledger opened read-only");
    }
    const auto start = std::chrono::steady_clock::now();
    Status st = TryInsert(rows);
    if (st.code() == StatusCode::kUnavailable && !writer_.ok() &&
        std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) {
      // The connection broke under the batch at once (a server restart, a
      // killed backend): once more on a fresh one. One that timed out (a cut
      // link) would time out again; the rows go to the spool instead.
      st = TryInsert(rows);
    }
    return st;
  }

  Expected<std::vector<CostGroup>> Query(const CostQuery& q) override {
    const std::string from = std::to_string(q.from_unix_ms);
    const std::string to = std::to_string(q.to_unix_ms);
    const char* params[] = {from.c_str(), to.c_str(), q.tenant ? q.tenant->c_str() : nullptr};
    const std::string sql = RollupSql(q, '$', has_shadow_columns_);
    std::lock_guard lock(read_mu_);
    ASSIGN_OR_RETURN(Result r, Read(sql.c_str(), q.tenant ? 3 : 2, params));
    std::vector<CostGroup> groups;
    const int n = PQntuples(r.get());
    groups.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      CostGroup g;
      int c = 0;
      g.key = PQgetvalue(r.get(), i, c++);
      if (q.by_day) g.day = DayString(Int64At(r.get(), i, c++));
      g.requests = Int64At(r.get(), i, c++);
      g.tokens.prompt = Int64At(r.get(), i, c++);
      g.tokens.cached = Int64At(r.get(), i, c++);
      g.tokens.output = Int64At(r.get(), i, c++);
      g.cost_usd = DoubleAt(r.get(), i, c++);
      g.escalations = Int64At(r.get(), i, c++);
      groups.push_back(std::move(g));
    }
    SortGroups(&groups);
    return groups;
  }

  Expected<double> SpendSince(const std::string& name, bool by_feature,
                              int64_t since_unix_ms) override {
    const std::string since = std::to_string(since_unix_ms);
    const char* params[] = {name.c_str(), since.c_str()};
    const std::string sql = SpendSql(by_feature, '$', has_shadow_columns_);
    std::lock_guard lock(read_mu_);
    ASSIGN_OR_RETURN(Result r, Read(sql.c_str(), 2, params));
    return DoubleAt(r.get(), 0, 0);
  }

  Expected<int64_t> CountRows() override {
    std::lock_guard lock(read_mu_);
    ASSIGN_OR_RETURN(Result r, Read("SELECT COUNT(*) FROM brisk_ledger", 0, nullptr));
    return Int64At(r.get(), 0, 0);
  }

  const char* kind() const override { return "postgresql"; }

 private:
  static Expected<std::set<std::string>> Columns(PgConnection& conn) {
    ASSIGN_OR_RETURN(Result r, conn.Exec(kColumnsSql));
    std::set<std::string> columns;
    for (int i = 0; i < PQntuples(r.get()); ++i) columns.insert(PQgetvalue(r.get(), i, 0));
    return columns;
  }

  // Under the advisory lock, so that gateways starting together neither
  // create the table twice nor add a column twice.
  Status CreateOrUpgradeTable() {
    for (const char* sql : {"BEGIN", kSchemaLock, kCreateTable, kCreateIndex}) {
      RETURN_IF_ERROR(writer_.Exec(sql).status());
    }
    ASSIGN_OR_RETURN(const std::set<std::string> columns, Columns(writer_));
    for (const auto& [name, definition] : kAddedColumns) {
      if (columns.count(name)) continue;
      const std::string sql =
          fmt::format("ALTER TABLE brisk_ledger ADD COLUMN {} {}", name, definition);
      RETURN_IF_ERROR(writer_.Exec(sql.c_str()).status());
    }
    return writer_.Exec("COMMIT").status();
  }

  Status TryInsert(std::span<const LedgerRow> rows) {
    if (!writer_.ok()) RETURN_IF_ERROR(writer_.Connect());
    Status st = InsertInTransaction(rows);
    if (!st.ok()) writer_.Rollback();
    return st;
  }

  Status InsertInTransaction(std::span<const LedgerRow> rows) {
    RETURN_IF_ERROR(writer_.Exec("BEGIN").status());
    std::vector<std::string> values;
    std::vector<const char*> params;
    for (size_t start = 0; start < rows.size(); start += kRowsPerStatement) {
      const size_t n = std::min<size_t>(kRowsPerStatement, rows.size() - start);
      values.clear();
      for (size_t i = 0; i < n; ++i) AppendParams(rows[start + i], &values);
      params.clear();
      for (const std::string& v : values) params.push_back(v.c_str());
      const int n_params = static_cast<int>(params.size());
      if (n == kRowsPerStatement) {
        if (!writer_.prepared()) {
          RETURN_IF_ERROR(writer_.Prepare(kInsertStatementName, InsertSql(kRowsPerStatement, '$')));
          writer_.set_prepared();
        }
        RETURN_IF_ERROR(
            writer_.ExecPrepared(kInsertStatementName, n_params, params.data()).status());
      } else {
        const std::string sql = InsertSql(static_cast<int>(n), '$');
        RETURN_IF_ERROR(writer_.Exec(sql.c_str(), n_params, params.data()).status());
      }
    }
    return writer_.Exec("COMMIT").status();
  }

  // A read on the reader connection, re-opened once if it broke.
  Expected<Result> Read(const char* sql, int n_params, const char* const* params) {
    for (int attempt = 0;; ++attempt) {
      if (!reader_.ok()) RETURN_IF_ERROR(reader_.Connect());
      auto r = reader_.Exec(sql, n_params, params);
      if (r.ok() || attempt == 1 || reader_.ok()) return r;
    }
  }

  LedgerMode mode_;
  std::mutex write_mu_;
  std::mutex read_mu_;
  PgConnection writer_;
  PgConnection reader_;
  bool has_shadow_columns_ = true;  // false: an older table opened read-only
};

}  // namespace

Expected<std::unique_ptr<LedgerStore>> OpenPostgresStore(const std::string& url, LedgerMode mode) {
  auto store = std::make_unique<PostgresStore>(url, mode);
  RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<LedgerStore>(std::move(store));
}

}  // namespace brisk::gateway
