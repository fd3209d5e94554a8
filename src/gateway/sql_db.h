// One connection to the database that holds the gateway's shared state
// (stored responses of the Responses API; the cost ledger has its own
// stores, ledger_store.h): SQLite for a single gateway, PostgreSQL for any
// number of them. A statement is written once, with $1..$N placeholders,
// and runs on both; values are always bound, never pasted into the text.
//
// Thread-safe: one connection behind a mutex (statements are short). On
// PostgreSQL a connection found broken is re-opened, and a statement that
// failed because the connection broke under it is run once more on the new
// one, so statements must be idempotent (upserts, deletes, reads).
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "util/status.h"

namespace brisk::gateway {

using SqlValue = std::variant<std::string, int64_t, double>;

// A column's text as a number (0 when it is not one: NULL reads as "").
inline int64_t SqlInt(const std::string& s) {
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}
inline double SqlDouble(const std::string& s) {
  double v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

struct SqlRows {
  std::vector<std::vector<std::string>> rows;  // text of each column; NULL reads as ""
  int64_t changed = 0;                         // rows an INSERT/UPDATE/DELETE touched
};

// The statements of one transaction (SqlDb::Transaction).
class SqlTx {
 public:
  virtual ~SqlTx() = default;
  virtual Expected<SqlRows> Run(std::string_view sql, std::span<const SqlValue> params = {}) = 0;
  Expected<SqlRows> Run(std::string_view sql, std::initializer_list<SqlValue> params) {
    return Run(sql, std::span<const SqlValue>(params.begin(), params.size()));
  }
  // " FOR UPDATE" on PostgreSQL (row locks), "" on SQLite (whose transaction
  // holds the database's write lock from its start).
  virtual const char* ForUpdate() const = 0;
};

class SqlDb {
 public:
  virtual ~SqlDb() = default;
  // Runs `body` in one transaction: committed when it returns Ok, rolled
  // back otherwise (its error is returned). SQLite: BEGIN IMMEDIATE, so
  // transactions of every process on the file are serialized from their
  // start; PostgreSQL: READ COMMITTED, rows locked with ForUpdate(). `body`
  // runs again, once, when the PostgreSQL connection broke under it, so it
  // must not keep state across runs.
  virtual Status Transaction(const std::function<Status(SqlTx&)>& body) = 0;
  virtual Expected<SqlRows> Run(std::string_view sql, std::span<const SqlValue> params = {}) = 0;
  Expected<SqlRows> Run(std::string_view sql, std::initializer_list<SqlValue> params) {
    return Run(sql, std::span<const SqlValue>(params.begin(), params.size()));
  }
  virtual bool postgres() const = 0;
};

// The ledger's URL forms (ledger.h OpenLedger): a plain path or sqlite://
// (SQLite, WAL, synchronous=FULL, the file created if missing) or
// postgresql:// / postgres:// (libpq). PostgreSQL is connected to at once;
// an unreachable server is an error here, a later outage is an error of the
// statements run during it (kUnavailable).
Expected<std::unique_ptr<SqlDb>> OpenSqlDb(const std::string& url);

}  // namespace brisk::gateway
