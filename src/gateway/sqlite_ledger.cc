// The SQLite ledger store: the embedded default. WAL with synchronous=FULL,
// so a committed batch survives a kill -9 and a power cut; one connection
// writes (the writer thread), another reads, so reports never wait for an
// fsync.
#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "gateway/ledger_store.h"

namespace brisk::gateway {
namespace {

constexpr int kBusyTimeoutMs = 5000;

constexpr const char* kSqliteCreateTable = R"sql(
CREATE TABLE IF NOT EXISTS brisk_ledger (
  id INTEGER PRIMARY KEY,
  time_unix_ms INTEGER NOT NULL,
  request_id TEXT NOT NULL UNIQUE,
  tenant TEXT NOT NULL,
  api_key_name TEXT NOT NULL,
  feature TEXT NOT NULL,
  tier TEXT NOT NULL,
  upstream TEXT NOT NULL,
  model TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cost_usd REAL NOT NULL,
  status INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  stream INTEGER NOT NULL,
  ttft_ms REAL NOT NULL,
  total_ms REAL NOT NULL,
  attempts INTEGER NOT NULL,
  escalations INTEGER NOT NULL,
  finish_reason TEXT NOT NULL,
  shadow INTEGER NOT NULL DEFAULT 0,
  rollout TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS brisk_ledger_time ON brisk_ledger (time_unix_ms);
)sql";

// Columns added after the first version, with their definitions: a table an
// older gateway created gains them on open, its rows then reading as callers'
// rows outside any rollout.
constexpr std::pair<const char*, const char*> kSqliteAddedColumns[] = {
    {"shadow", "INTEGER NOT NULL DEFAULT 0"},
    {"rollout", "TEXT NOT NULL DEFAULT ''"},
};

// The canonical code of a SQLite result: what the writer may retry row by
// row (data), what is the environment (disk, locks).
StatusCode CodeOf(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE: return StatusCode::kInvalidArgument;
    case SQLITE_FULL: return StatusCode::kResourceExhausted;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return StatusCode::kDataLoss;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_PERM: return StatusCode::kUnavailable;
    default: return StatusCode::kInternal;
  }
}

class Connection {
 public:
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
    if (db_) sqlite3_close_v2(db_);
  }

  Status Open(const std::string& path, int flags) {
    path_ = path;
    const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      return Status(CodeOf(rc), fmt::format("cannot open SQLite ledger '{}': {}", path,
                                            db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    return Status::Ok();
  }

  Status Exec(const char* sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    if (rc == SQLITE_OK) return Status::Ok();
    Status st = Error(rc, err ? err : sqlite3_errmsg(db_));
    sqlite3_free(err);
    return st;
  }

  // A statement prepared once and kept (reset before each use).
  Expected<sqlite3_stmt*> Prepare(const std::string& sql) {
    if (auto it = statements_.find(sql); it != statements_.end()) {
      sqlite3_reset(it->second);
      sqlite3_clear_bindings(it->second);
      return it->second;
    }
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(rc, sqlite3_errmsg(db_));
    statements_.emplace(sql, stmt);
    return stmt;
  }

  Status Error(int rc, std::string_view message) const {
    return Status(CodeOf(rc), fmt::format("SQLite ledger '{}': {}", path_, message));
  }
  Status Error(int rc) const { return Error(rc, sqlite3_errmsg(db_)); }

  sqlite3* db() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::map<std::string, sqlite3_stmt*> statements_;
};

std::string ColumnText(sqlite3_stmt* stmt, int i) {
  const unsigned char* text = sqlite3_column_text(stmt, i);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt, i)));
}

class SqliteStore final : public LedgerStore {
 public:
  Status Open(const std::string& path, LedgerMode mode) {
    namespace fs = std::filesystem;
    path_ = path;
    if (path.empty()) return InvalidArgument("empty SQLite ledger path");
    if (path == ":memory:" || path.starts_with("file:")) {
      return InvalidArgument(
          "SQLite ledger '{}': give a file path (an in-memory ledger is lost "
          "at exit, and the writer and readers would not share it)",
          path);
    }
    std::error_code ec;
    if (mode == LedgerMode::kReadOnly) {
      if (!fs::exists(path, ec)) {
        return NotFound("no cost ledger at '{}' (the gateway creates it at its ledger.url)", path);
      }
      RETURN_IF_ERROR(reader_.Open(path, SQLITE_OPEN_READONLY));
      RETURN_IF_ERROR(CheckTable(reader_, /*must_exist=*/true));
      // An older table is read as it is (brisk cost writes nothing).
      ASSIGN_OR_RETURN(const std::set<std::string> columns, Columns(reader_));
      has_shadow_columns_ = columns.count("shadow") && columns.count("rollout");
      return Status::Ok();
    }
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec)) {
      return NotFound("cannot create SQLite ledger '{}': directory '{}' does not exist", path,
                      parent.string());
    }
    RETURN_IF_ERROR(writer_.Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    RETURN_IF_ERROR(CheckTable(writer_, /*must_exist=*/false));
    RETURN_IF_ERROR(SetWal());
    RETURN_IF_ERROR(writer_.Exec("PRAGMA synchronous=FULL"));
    RETURN_IF_ERROR(writer_.Exec(kSqliteCreateTable));
    RETURN_IF_ERROR(AddMissingColumns());
    RETURN_IF_ERROR(reader_.Open(path, SQLITE_OPEN_READWRITE));
    // Prepared now so that a schema problem shows at open, not at the first row.
    ASSIGN_OR_RETURN(insert_, writer_.Prepare(InsertSql(1, '?')));
    ASSIGN_OR_RETURN(begin_, writer_.Prepare("BEGIN IMMEDIATE"));
    ASSIGN_OR_RETURN(commit_, writer_.Prepare("COMMIT"));
    return Status::Ok();
  }

  Status InsertBatch(std::span<const LedgerRow> rows) override {
    std::lock_guard lock(write_mu_);
    if (!insert_) return Status(StatusCode::kUnimplemented, "SQLite ledger opened read-only");
    RETURN_IF_ERROR(Step(begin_));
    for (const LedgerRow& row : rows) {
      Status st = InsertRow(row);
      if (!st.ok()) return Rollback(std::move(st));
    }
    Status st = Step(commit_);
    if (!st.ok()) return Rollback(std::move(st));
    return Status::Ok();
  }

  Expected<std::vector<CostGroup>> Query(const CostQuery& q) override {
    std::lock_guard lock(read_mu_);
    ASSIGN_OR_RETURN(sqlite3_stmt * stmt, reader_.Prepare(RollupSql(q, '?', has_shadow_columns_)));
    sqlite3_bind_int64(stmt, 1, q.from_unix_ms);
    sqlite3_bind_int64(stmt, 2, q.to_unix_ms);
    if (q.tenant) {
      sqlite3_bind_text(stmt, 3, q.tenant->data(), static_cast<int>(q.tenant->size()),
                        SQLITE_STATIC);
    }
    std::vector<CostGroup> groups;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      CostGroup g;
      int c = 0;
      g.key = ColumnText(stmt, c++);
      if (q.by_day) g.day = DayString(sqlite3_column_int64(stmt, c++));
      g.requests = sqlite3_column_int64(stmt, c++);
      g.tokens.prompt = sqlite3_column_int64(stmt, c++);
      g.tokens.cached = sqlite3_column_int64(stmt, c++);
      g.tokens.output = sqlite3_column_int64(stmt, c++);
      g.cost_usd = sqlite3_column_double(stmt, c++);
      g.escalations = sqlite3_column_int64(stmt, c++);
      groups.push_back(std::move(g));
    }
    Status st = rc == SQLITE_DONE ? Status::Ok() : reader_.Error(rc);
    sqlite3_reset(stmt);
    if (!st.ok()) return st;
    SortGroups(&groups);
    return groups;
  }

  Expected<double> SpendSince(const std::string& name, bool by_feature,
                              int64_t since_unix_ms) override {
    std::lock_guard lock(read_mu_);
    ASSIGN_OR_RETURN(sqlite3_stmt * stmt,
                     reader_.Prepare(SpendSql(by_feature, '?', has_shadow_columns_)));
    sqlite3_bind_text(stmt, 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 2, since_unix_ms);
    return StepOneDouble(stmt);
  }

  Expected<int64_t> CountRows() override {
    std::lock_guard lock(read_mu_);
    ASSIGN_OR_RETURN(sqlite3_stmt * stmt, reader_.Prepare("SELECT COUNT(*) FROM brisk_ledger"));
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW) {
      Status st = reader_.Error(rc);
      sqlite3_reset(stmt);
      return st;
    }
    const int64_t n = sqlite3_column_int64(stmt, 0);
    sqlite3_reset(stmt);
    return n;
  }

  const char* kind() const override { return "sqlite"; }

 private:
  // Reading sqlite_master is the first real read: it tells a file that is
  // not a database, and whether our table is there.
  Status CheckTable(Connection& conn, bool must_exist) {
    ASSIGN_OR_RETURN(sqlite3_stmt * stmt,
                     conn.Prepare("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
                                  "name = 'brisk_ledger'"));
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW) {
      Status st = conn.Error(rc);
      sqlite3_reset(stmt);
      return st;
    }
    const bool exists = sqlite3_column_int64(stmt, 0) > 0;
    sqlite3_reset(stmt);
    if (must_exist && !exists) {
      return NotFound("'{}' has no brisk_ledger table: not a Brisk cost ledger", path_);
    }
    return Status::Ok();
  }

  Expected<std::set<std::string>> Columns(Connection& conn) {
    ASSIGN_OR_RETURN(sqlite3_stmt * stmt,
                     conn.Prepare("SELECT name FROM pragma_table_info('brisk_ledger')"));
    std::set<std::string> columns;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) columns.insert(ColumnText(stmt, 0));
    Status st = rc == SQLITE_DONE ? Status::Ok() : conn.Error(rc);
    sqlite3_reset(stmt);
    if (!st.ok()) return st;
    return columns;
  }

  // In one write transaction, so that two gateways opening the same old file
  // do not both add a column (the second would fail on a duplicate).
  Status AddMissingColumns() {
    RETURN_IF_ERROR(writer_.Exec("BEGIN IMMEDIATE"));
    Expected<std::set<std::string>> columns = Columns(writer_);
    if (!columns.ok()) return Rollback(columns.status());
    for (const auto& [name, definition] : kSqliteAddedColumns) {
      if (columns->count(name)) continue;
      Status st = writer_.Exec(
          fmt::format("ALTER TABLE brisk_ledger ADD COLUMN {} {}", name, definition).c_str());
      if (!st.ok()) return Rollback(st.WithContext("upgrading the brisk_ledger table"));
    }
    Status st = writer_.Exec("COMMIT");
    if (!st.ok()) return Rollback(std::move(st));
    return Status::Ok();
  }

  Status SetWal() {
    ASSIGN_OR_RETURN(sqlite3_stmt * stmt, writer_.Prepare("PRAGMA journal_mode=WAL"));
    const int rc = sqlite3_step(stmt);
    std::string mode = rc == SQLITE_ROW ? ColumnText(stmt, 0) : "";
    sqlite3_reset(stmt);
    if (rc != SQLITE_ROW) return writer_.Error(rc);
    if (mode != "wal") {
      return writer_.Error(SQLITE_CANTOPEN,
                           fmt::format("cannot use write-ahead logging (journal mode stays '{}'; "
                                       "is the file on a network file system?)",
                                       mode));
    }
    return Status::Ok();
  }

  Status Step(sqlite3_stmt* stmt) {
    const int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return writer_.Error(rc);
    return Status::Ok();
  }

  Status InsertRow(const LedgerRow& r) {
    sqlite3_stmt* s = insert_;
    sqlite3_reset(s);
    auto text = [&](int i, const std::string& v) {
      sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    };
    int i = 1;
    sqlite3_bind_int64(s, i++, r.time_unix_ms);
    text(i++, r.request_id);
    text(i++, r.tenant);
    text(i++, r.api_key_name);
    text(i++, r.feature);
    text(i++, r.tier);
    text(i++, r.upstream);
    text(i++, r.model);
    text(i++, r.endpoint);
    sqlite3_bind_int64(s, i++, r.tokens.prompt);
    sqlite3_bind_int64(s, i++, r.tokens.cached);
    sqlite3_bind_int64(s, i++, r.tokens.output);
    sqlite3_bind_double(s, i++, r.cost_usd);
    sqlite3_bind_int(s, i++, r.status);
    text(i++, r.outcome);
    sqlite3_bind_int(s, i++, r.stream ? 1 : 0);
    sqlite3_bind_double(s, i++, r.ttft_ms);
    sqlite3_bind_double(s, i++, r.total_ms);
    sqlite3_bind_int(s, i++, r.attempts);
    sqlite3_bind_int(s, i++, r.escalations);
    text(i++, r.finish_reason);
    sqlite3_bind_int(s, i++, r.shadow ? 1 : 0);
    text(i++, r.rollout);
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_DONE) return writer_.Error(rc);
    return Status::Ok();
  }

  Status Rollback(Status cause) {
    if (!sqlite3_get_autocommit(writer_.db())) {
      Status st = writer_.Exec("ROLLBACK");
      if (!st.ok()) {
        return Status(cause.code(), fmt::format("{}; the rollback failed too: {}", cause.message(),
                                                st.message()));
      }
    }
    return cause;
  }

  Expected<double> StepOneDouble(sqlite3_stmt* stmt) {
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW) {
      Status st = reader_.Error(rc);
      sqlite3_reset(stmt);
      return st;
    }
    const double v = sqlite3_column_double(stmt, 0);
    sqlite3_reset(stmt);
    return v;
  }

  std::string path_;
  std::mutex write_mu_;
  std::mutex read_mu_;
  Connection writer_;
  Connection reader_;
  sqlite3_stmt* insert_ = nullptr;  // owned by writer_
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  bool has_shadow_columns_ = true;  // false: an older table opened read-only
};

}  // namespace

Expected<std::unique_ptr<LedgerStore>> OpenSqliteStore(const std::string& path, LedgerMode mode) {
  auto store = std::make_unique<SqliteStore>();
  RETURN_IF_ERROR(store->Open(path, mode));
  return std::unique_ptr<LedgerStore>(std::move(store));
}

}  // namespace brisk::gateway
