#include "gateway/sql_db.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <chrono>
#include <mutex>

#include "gateway/ledger.h"
#include "util/log.h"

namespace brisk::gateway {
namespace {

// libpq's messages span lines and indent their hints.
std::string PgOneLine(const char* message) {
  std::string out;
  for (const char* p = message ? message : ""; *p; ++p) {
    const char c = *p == '\n' || *p == '\t' ? ' ' : *p;
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string SqlText(const SqlValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  return fmt::format("{}", std::get<double>(v));  // shortest form that reads back the same
}

// A connection that broke at once (a restarted server) is worth one more try
// on a fresh one; one that broke by timing out (a cut link) would only time
// out again, in connect_timeout.
bool SlowBreak(std::chrono::steady_clock::time_point start) {
  return std::chrono::steady_clock::now() - start > std::chrono::seconds(1);
}

// Every statement and lock wait is bounded; a transaction left open by a
// gateway that went away is ended by the server.
constexpr const char* kSessionOptions =
    "-c statement_timeout=10000 -c lock_timeout=5000 -c idle_in_transaction_session_timeout=10000";

class PostgresDb final : public SqlDb {
 public:
  explicit PostgresDb(std::string url) : url_(std::move(url)) {}
  ~PostgresDb() override {
    if (conn_) PQfinish(conn_);
  }

  Status Connect() {
    if (conn_) PQfinish(conn_);
    // A cut link fails a statement in seconds instead of TCP's minutes (unacked
    // data: tcp_user_timeout; a silent peer: keepalives), and the server ends
    // a session of ours stuck in a transaction, releasing its row locks (a
    // budget window), when the link to this gateway is cut under it.
    const char* keys[] = {"connect_timeout",
                          "keepalives",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "tcp_user_timeout",
                          "options",
                          "application_name",
                          "dbname",
                          "client_encoding",
                          nullptr};
    const char* values[] = {
        "5",          "1",    "5",    "1", "3", "5000", kSessionOptions, "brisk-gateway",
        url_.c_str(), "UTF8", nullptr};
    conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
    if (!conn_) return Internal("out of memory connecting to PostgreSQL");
    PQsetNoticeProcessor(
        conn_, [](void*, const char* m) { log::Debug("postgresql: {}", PgOneLine(m)); }, nullptr);
    if (PQstatus(conn_) != CONNECTION_OK) {
      return Status(StatusCode::kUnavailable,
                    fmt::format("cannot connect to PostgreSQL '{}': {}", RedactLedgerUrl(url_),
                                PgOneLine(PQerrorMessage(conn_))));
    }
    return Status::Ok();
  }

  Expected<SqlRows> Run(std::string_view sql, std::span<const SqlValue> params) override {
    std::lock_guard lock(mu_);
    for (int round = 0;; ++round) {
      if (!conn_ || PQstatus(conn_) != CONNECTION_OK) RETURN_IF_ERROR(Connect());
      const auto start = std::chrono::steady_clock::now();
      auto rows = ExecValues(sql, params);
      if (rows.ok() || PQstatus(conn_) == CONNECTION_OK || round == 1 || SlowBreak(start)) {
        return rows;
      }
      log::Warn("gateway: PostgreSQL connection lost ({}); reconnecting", rows.status().message());
    }
  }

  Status Transaction(const std::function<Status(SqlTx&)>& body) override {
    std::lock_guard lock(mu_);
    struct Tx final : SqlTx {
      explicit Tx(PostgresDb* db) : db(db) {}
      Expected<SqlRows> Run(std::string_view sql, std::span<const SqlValue> params) override {
        return db->ExecValues(sql, params);
      }
      const char* ForUpdate() const override { return " FOR UPDATE"; }
      PostgresDb* db;
    };
    for (int round = 0;; ++round) {
      if (!conn_ || PQstatus(conn_) != CONNECTION_OK) RETURN_IF_ERROR(Connect());
      const auto start = std::chrono::steady_clock::now();
      Tx tx(this);
      Status st = ExecValues("BEGIN", {}).status();
      if (st.ok()) st = body(tx);
      if (st.ok()) st = ExecValues("COMMIT", {}).status();
      if (st.ok()) return st;
      if (PQstatus(conn_) == CONNECTION_OK) {
        if (PQtransactionStatus(conn_) != PQTRANS_IDLE) (void)ExecValues("ROLLBACK", {});
        return st;
      }
      // A COMMIT cut off may or may not have happened: the body runs once more.
      if (round == 1 || SlowBreak(start)) return st;
      log::Warn("gateway: PostgreSQL connection lost in a transaction ({}); reconnecting",
                st.message());
    }
  }

  bool postgres() const override { return true; }

 private:
  Expected<SqlRows> ExecValues(std::string_view sql, std::span<const SqlValue> params) {
    const std::string text(sql);
    std::vector<std::string> values;
    values.reserve(params.size());
    for (const SqlValue& v : params) values.push_back(SqlText(v));
    std::vector<const char*> ptrs;
    for (const std::string& v : values) ptrs.push_back(v.c_str());
    return Exec(text, ptrs);
  }

  Expected<SqlRows> Exec(const std::string& sql, const std::vector<const char*>& params) {
    PGresult* r = PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                               params.data(), nullptr, nullptr, 0);
    const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      const std::string message = PgOneLine(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
      const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
      const std::string sqlstate = state ? state : "";  // a copy: PQclear frees `state`
      if (r) PQclear(r);
      StatusCode code = StatusCode::kInternal;
      if (PQstatus(conn_) != CONNECTION_OK || sqlstate.starts_with("08") ||
          sqlstate.starts_with("57")) {
        code = StatusCode::kUnavailable;
      } else if (sqlstate.starts_with("22") || sqlstate.starts_with("23")) {
        code = StatusCode::kInvalidArgument;
      } else if (sqlstate.starts_with("53")) {
        code = StatusCode::kResourceExhausted;
      }
      return Status(code, fmt::format("PostgreSQL '{}': {}", RedactLedgerUrl(url_), message));
    }
    SqlRows out;
    const int n = PQntuples(r), cols = PQnfields(r);
    out.rows.resize(n);
    for (int i = 0; i < n; ++i) {
      out.rows[i].reserve(cols);
      for (int c = 0; c < cols; ++c) {
        out.rows[i].emplace_back(PQgetvalue(r, i, c), PQgetlength(r, i, c));
      }
    }
    const char* changed = PQcmdTuples(r);
    if (changed && *changed) out.changed = std::stoll(changed);
    PQclear(r);
    return out;
  }

  std::mutex mu_;
  std::string url_;
  PGconn* conn_ = nullptr;
};

constexpr int kSqlDbBusyTimeoutMs = 5000;

class SqliteDb final : public SqlDb {
 public:
  explicit SqliteDb(std::string path) : path_(std::move(path)) {}
  ~SqliteDb() override {
    if (db_) sqlite3_close_v2(db_);
  }

  Status Open() {
    const int rc =
        sqlite3_open_v2(path_.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      return Status(StatusCode::kUnavailable,
                    fmt::format("cannot open SQLite database '{}': {}", path_, sqlite3_errstr(rc)));
    }
    sqlite3_busy_timeout(db_, kSqlDbBusyTimeoutMs);
    for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"}) {
      auto r = RunLocked(pragma, {});
      if (!r.ok()) return r.status();
    }
    return Status::Ok();
  }

  Expected<SqlRows> Run(std::string_view sql, std::span<const SqlValue> params) override {
    std::lock_guard lock(mu_);
    return RunLocked(sql, params);
  }

  Status Transaction(const std::function<Status(SqlTx&)>& body) override {
    std::lock_guard lock(mu_);
    struct Tx final : SqlTx {
      explicit Tx(SqliteDb* db) : db(db) {}
      Expected<SqlRows> Run(std::string_view sql, std::span<const SqlValue> params) override {
        return db->RunLocked(sql, params);
      }
      const char* ForUpdate() const override { return ""; }
      SqliteDb* db;
    };
    RETURN_IF_ERROR(RunLocked("BEGIN IMMEDIATE", {}).status());
    Tx tx(this);
    Status st = body(tx);
    if (st.ok()) st = RunLocked("COMMIT", {}).status();
    if (!st.ok() && !sqlite3_get_autocommit(db_)) (void)RunLocked("ROLLBACK", {});
    return st;
  }

  bool postgres() const override { return false; }

 private:
  Status Error(int rc) const {
    StatusCode code = StatusCode::kInternal;
    switch (rc & 0xff) {
      case SQLITE_CONSTRAINT:
      case SQLITE_TOOBIG:
      case SQLITE_MISMATCH: code = StatusCode::kInvalidArgument; break;
      case SQLITE_FULL: code = StatusCode::kResourceExhausted; break;
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
      case SQLITE_IOERR:
      case SQLITE_READONLY:
      case SQLITE_CANTOPEN: code = StatusCode::kUnavailable; break;
      default: break;
    }
    return Status(code, fmt::format("SQLite '{}': {}", path_, sqlite3_errmsg(db_)));
  }

  // Runs every statement of `sql` (the parameters bind to the last one).
  Expected<SqlRows> RunLocked(std::string_view sql, std::span<const SqlValue> params) {
    SqlRows out;
    const char* tail = sql.data();
    const char* end = sql.data() + sql.size();
    while (tail < end) {
      sqlite3_stmt* stmt = nullptr;
      const char* next = nullptr;
      int rc = sqlite3_prepare_v2(db_, tail, static_cast<int>(end - tail), &stmt, &next);
      if (rc != SQLITE_OK) return Error(rc);
      tail = next;
      if (stmt == nullptr) continue;  // whitespace or a comment
      for (size_t i = 0; i < params.size(); ++i) {
        const int index = sqlite3_bind_parameter_index(stmt, fmt::format("${}", i + 1).c_str());
        if (index == 0) continue;  // not used by this statement
        const SqlValue& v = params[i];
        if (const auto* s = std::get_if<std::string>(&v)) {
          rc = sqlite3_bind_text(stmt, index, s->data(), static_cast<int>(s->size()),
                                 SQLITE_TRANSIENT);
        } else if (const auto* n = std::get_if<int64_t>(&v)) {
          rc = sqlite3_bind_int64(stmt, index, *n);
        } else {
          rc = sqlite3_bind_double(stmt, index, std::get<double>(v));
        }
        if (rc != SQLITE_OK) {
          Status st = Error(rc);
          sqlite3_finalize(stmt);
          return st;
        }
      }
      out.rows.clear();
      while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        const int cols = sqlite3_column_count(stmt);
        std::vector<std::string> row;
        row.reserve(cols);
        for (int c = 0; c < cols; ++c) {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
          row.emplace_back(text ? text : "", text ? sqlite3_column_bytes(stmt, c) : 0);
        }
        out.rows.push_back(std::move(row));
      }
      if (rc != SQLITE_DONE) {
        Status st = Error(rc);
        sqlite3_finalize(stmt);
        return st;
      }
      out.changed = sqlite3_changes64(db_);
      sqlite3_finalize(stmt);
    }
    return out;
  }

  std::mutex mu_;
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace

Expected<std::unique_ptr<SqlDb>> OpenSqlDb(const std::string& url) {
  if (url.empty()) return InvalidArgument("empty database URL (a SQLite path or postgresql://...)");
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    auto db = std::make_unique<PostgresDb>(url);
    RETURN_IF_ERROR(db->Connect());
    return std::unique_ptr<SqlDb>(std::move(db));
  }
  std::string path = url;
  if (path.starts_with("sqlite:")) {
    path = path.substr(7);
    if (path.starts_with("//")) path = path.substr(2);
  } else if (url.find("://") != std::string::npos) {
    return InvalidArgument(
        "database URL '{}': use a SQLite path, sqlite:///path.db or "
        "postgresql://user@host:port/db",
        RedactLedgerUrl(url));
  }
  auto db = std::make_unique<SqliteDb>(path);
  RETURN_IF_ERROR(db->Open());
  return std::unique_ptr<SqlDb>(std::move(db));
}

}  // namespace brisk::gateway
