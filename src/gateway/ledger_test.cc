// The cost ledger on SQLite (the contract in ledger_test_util.h), the
// group-commit writer over a fake store (failures), URLs, and durability
// across a kill -9.
#include "gateway/ledger.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "gateway/ledger_store.h"
#include "gateway/ledger_test_util.h"

namespace brisk::gateway {
namespace {

namespace fs = std::filesystem;
using test::kDec1Ms;
using test::Row;

class SqliteLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "brisk-ledger-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = (fs::path(dir_) / "ledger.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Ledger> Open(LedgerMode mode = LedgerMode::kReadWrite) {
    auto ledger = OpenLedger(path_, mode);
    EXPECT_TRUE(ledger.ok()) << ledger.status().ToString();
    return ledger.ok() ? std::move(ledger).value() : nullptr;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SqliteLedgerTest, AppendsAreRowsAfterFlush) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  EXPECT_STREQ(ledger->kind(), "sqlite");
  test::CheckAppendFlushCount(*ledger);
}

TEST_F(SqliteLedgerTest, DuplicateRequestIdIsIgnored) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckDuplicatesIgnored(*ledger);
}

TEST_F(SqliteLedgerTest, RollupsByFeatureTierTenantAndDay) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckRollups(*ledger);
}

TEST_F(SqliteLedgerTest, SpendSince) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckSpendSince(*ledger);
}

TEST_F(SqliteLedgerTest, ShadowRowsAreApartFromTheBill) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckShadowRows(*ledger);
}

TEST_F(SqliteLedgerTest, CallbacksFireAfterTheRowIsReadable) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  auto reader = Open(LedgerMode::kReadOnly);
  ASSERT_TRUE(reader);
  test::CheckCallbacksAfterCommit(*ledger, *reader);
}

TEST_F(SqliteLedgerTest, TenThousandRowsInFewTransactions) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckLargeBatch(*ledger);
}

TEST_F(SqliteLedgerTest, TextIsStoredAsValidUtf8) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckTextCleaned(*ledger);
}

TEST_F(SqliteLedgerTest, ReopeningSeesTheRowsAndClosingCommitsTheQueue) {
  std::atomic<int> ok{0};
  {
    auto ledger = Open();
    ASSERT_TRUE(ledger);
    for (int i = 0; i < 1000; ++i) {
      ledger->Append(Row(fmt::format("r{}", i), kDec1Ms + i), [&](const Status& st) {
        if (st.ok()) ++ok;
      });
    }
    // No Flush: the destructor commits what is queued.
  }
  EXPECT_EQ(ok.load(), 1000);
  for (LedgerMode mode : {LedgerMode::kReadWrite, LedgerMode::kReadOnly}) {
    auto again = Open(mode);
    ASSERT_TRUE(again);
    auto n = again->CountRows();
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, 1000);
  }
  // The URL forms name the same file.
  auto by_url = OpenLedger("sqlite://" + path_, LedgerMode::kReadOnly);  // sqlite:///abs/path
  ASSERT_TRUE(by_url.ok()) << by_url.status().ToString();
  EXPECT_EQ(*(*by_url)->CountRows(), 1000);
}

TEST_F(SqliteLedgerTest, TableHasOneColumnPerFieldAndWal) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::AppendAll(*ledger, {Row("one", kDec1Ms)});
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info('brisk_ledger')", -1, &stmt,
                               nullptr),
            SQLITE_OK);
  std::set<std::string> columns;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    columns.insert(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  }
  sqlite3_finalize(stmt);
  for (const char* c : kLedgerColumns) EXPECT_TRUE(columns.count(c)) << c;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  // The row's every field round-trips.
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT request_id, tenant, api_key_name, feature, tier, upstream, "
                               "model, endpoint, prompt_tokens, cached_tokens, completion_tokens, "
                               "cost_usd, status, outcome, stream, ttft_ms, total_ms, attempts, "
                               "escalations, finish_reason, time_unix_ms, shadow, rollout "
                               "FROM brisk_ledger",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  const LedgerRow want = Row("one", kDec1Ms);
  auto text = [&](int i) {
    return std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, i)));
  };
  EXPECT_EQ(text(0), want.request_id);
  EXPECT_EQ(text(1), want.tenant);
  EXPECT_EQ(text(2), want.api_key_name);
  EXPECT_EQ(text(3), want.feature);
  EXPECT_EQ(text(4), want.tier);
  EXPECT_EQ(text(5), want.upstream);
  EXPECT_EQ(text(6), want.model);
  EXPECT_EQ(text(7), want.endpoint);
  EXPECT_EQ(sqlite3_column_int64(stmt, 8), want.tokens.prompt);
  EXPECT_EQ(sqlite3_column_int64(stmt, 9), want.tokens.cached);
  EXPECT_EQ(sqlite3_column_int64(stmt, 10), want.tokens.output);
  EXPECT_EQ(sqlite3_column_double(stmt, 11), want.cost_usd);
  EXPECT_EQ(sqlite3_column_int(stmt, 12), want.status);
  EXPECT_EQ(text(13), want.outcome);
  EXPECT_EQ(sqlite3_column_int(stmt, 14), 1);
  EXPECT_EQ(sqlite3_column_double(stmt, 15), want.ttft_ms);
  EXPECT_EQ(sqlite3_column_double(stmt, 16), want.total_ms);
  EXPECT_EQ(sqlite3_column_int(stmt, 17), want.attempts);
  EXPECT_EQ(sqlite3_column_int(stmt, 18), want.escalations);
  EXPECT_EQ(text(19), want.finish_reason);
  EXPECT_EQ(sqlite3_column_int64(stmt, 20), want.time_unix_ms);
  EXPECT_EQ(sqlite3_column_int(stmt, 21), 0);
  EXPECT_EQ(text(22), "");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// A ledger file written by a gateway from before rollouts (the table of that
// version, verbatim): read-only it reads as callers' rows outside any
// rollout; read-write it gains the shadow and rollout columns, keeping its rows.
TEST_F(SqliteLedgerTest, AnOlderTableIsUpgradedOnOpen) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, R"sql(
CREATE TABLE brisk_ledger (
  id INTEGER PRIMARY KEY, time_unix_ms INTEGER NOT NULL, request_id TEXT NOT NULL UNIQUE,
  tenant TEXT NOT NULL, api_key_name TEXT NOT NULL, feature TEXT NOT NULL, tier TEXT NOT NULL,
  upstream TEXT NOT NULL, model TEXT NOT NULL, endpoint TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL, status INTEGER NOT NULL,
  outcome TEXT NOT NULL, stream INTEGER NOT NULL, ttft_ms REAL NOT NULL, total_ms REAL NOT NULL,
  attempts INTEGER NOT NULL, escalations INTEGER NOT NULL, finish_reason TEXT NOT NULL);
CREATE INDEX brisk_ledger_time ON brisk_ledger (time_unix_ms);
INSERT INTO brisk_ledger VALUES (1, 1796083200000, 'old-1', 'acme', 'acme-key', 'chat', 'small',
  'u', 'm', 'chat.completions', 100, 20, 50, 0.25, 200, 'completed', 1, 12.5, 240.25, 1, 0,
  'stop');)sql",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  {
    auto ro = Open(LedgerMode::kReadOnly);
    ASSERT_TRUE(ro);
    ASSERT_NO_FATAL_FAILURE(test::CheckOlderTableReadsAsCallers(*ro));
  }
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  ASSERT_NO_FATAL_FAILURE(test::CheckShadowOnUpgradedTable(*ledger));
  ledger.reset();
  // Opening again finds nothing to add.
  ASSERT_TRUE(Open());
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT shadow, rollout FROM brisk_ledger WHERE request_id = "
                               "'old-1'",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 0);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1)), "");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(SqliteLedgerTest, OpenErrorsSayWhatIsWrong) {
  auto missing = OpenLedger(path_, LedgerMode::kReadOnly);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no cost ledger at '" + path_ + "'"), std::string::npos)
      << missing.status().message();
  EXPECT_FALSE(fs::exists(path_));  // read-only creates nothing

  auto no_dir = OpenLedger(dir_ + "/nope/ledger.db");
  ASSERT_FALSE(no_dir.ok());
  EXPECT_NE(no_dir.status().message().find("directory '" + dir_ + "/nope' does not exist"),
            std::string::npos)
      << no_dir.status().message();

  const std::string junk = dir_ + "/junk.db";
  std::ofstream(junk) << std::string(4096, 'x');
  for (LedgerMode mode : {LedgerMode::kReadWrite, LedgerMode::kReadOnly}) {
    auto not_db = OpenLedger(junk, mode);
    ASSERT_FALSE(not_db.ok());
    EXPECT_NE(not_db.status().message().find("not a database"), std::string::npos)
        << not_db.status().message();
  }

  // An SQLite file without our table, read-only.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE other (x)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto foreign = OpenLedger(path_, LedgerMode::kReadOnly);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("no brisk_ledger table"), std::string::npos);

  auto memory = OpenLedger(":memory:");
  EXPECT_EQ(memory.status().code(), StatusCode::kInvalidArgument);
  auto scheme = OpenLedger("mysql://u:pw@h/db");
  ASSERT_FALSE(scheme.ok());
  EXPECT_EQ(scheme.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(scheme.status().message().find("unsupported scheme 'mysql'"), std::string::npos);
  EXPECT_EQ(scheme.status().message().find("pw"), std::string::npos);
  EXPECT_FALSE(OpenLedger("").ok());
}

TEST_F(SqliteLedgerTest, ReadOnlyLedgerRefusesAppends) {
  { ASSERT_TRUE(Open()); }
  auto ro = Open(LedgerMode::kReadOnly);
  ASSERT_TRUE(ro);
  Status got;
  ro->Append(Row("x", kDec1Ms), [&](const Status& st) { got = st; });
  EXPECT_FALSE(got.ok());
  ro->Flush();
  EXPECT_EQ(*ro->CountRows(), 0);
}

// A child process appends rows and reports each durable callback on a pipe;
// the parent kills it with SIGKILL while it is still writing, then every row
// the child reported must be in the file.
TEST_F(SqliteLedgerTest, KillNineAfterTheCallbackKeepsTheRow) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    auto ledger = OpenLedger(path_);
    if (!ledger.ok()) _exit(3);
    for (int i = 0;; ++i) {
      const std::string id = fmt::format("k{}", i);
      (*ledger)->Append(Row(id, kDec1Ms + i), [fd = fds[1], id](const Status& st) {
        if (!st.ok()) return;
        const std::string line = id + "\n";
        if (write(fd, line.data(), line.size()) < 0) _exit(4);
      });
      if (i % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  close(fds[1]);
  FILE* in = fdopen(fds[0], "r");
  ASSERT_NE(in, nullptr);
  std::vector<std::string> durable;
  char buf[64];
  while (durable.size() < 300 && std::fgets(buf, sizeof buf, in)) {
    std::string id(buf);
    id.pop_back();
    durable.push_back(id);
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  std::fclose(in);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited by itself: " << status;
  ASSERT_EQ(durable.size(), 300u);

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT request_id FROM brisk_ledger", -1, &stmt, nullptr),
            SQLITE_OK);
  std::set<std::string> stored;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    stored.insert(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  for (const std::string& id : durable) EXPECT_TRUE(stored.count(id)) << id;
  EXPECT_GE(stored.size(), durable.size());
}

// --- The writer over a fake store ---------------------------------------------

class FakeStore : public LedgerStore {
 public:
  struct Shared {
    std::mutex mu;
    std::vector<size_t> batch_sizes;
    std::set<std::string> bad_ids;  // a batch holding one fails with kInvalidArgument
    bool down = false;              // every batch fails with kUnavailable
    std::vector<std::string> committed;
  };
  explicit FakeStore(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
  Status InsertBatch(std::span<const LedgerRow> rows) override {
    std::lock_guard lock(s_->mu);
    s_->batch_sizes.push_back(rows.size());
    if (s_->down) return Status(StatusCode::kUnavailable, "store down");
    for (const LedgerRow& r : rows) {
      if (s_->bad_ids.count(r.request_id)) return InvalidArgument("bad row {}", r.request_id);
    }
    for (const LedgerRow& r : rows) s_->committed.push_back(r.request_id);
    return Status::Ok();
  }
  Expected<std::vector<CostGroup>> Query(const CostQuery&) override {
    return std::vector<CostGroup>{};
  }
  Expected<double> SpendSince(const std::string&, bool, int64_t) override { return 0.0; }
  Expected<int64_t> CountRows() override {
    std::lock_guard lock(s_->mu);
    return static_cast<int64_t>(s_->committed.size());
  }
  const char* kind() const override { return "fake"; }

 private:
  std::shared_ptr<Shared> s_;
};

TEST(GroupCommitLedgerTest, OneBadRowDoesNotLoseItsBatch) {
  auto shared = std::make_shared<FakeStore::Shared>();
  shared->bad_ids = {"b3"};
  auto ledger = NewGroupCommitLedger(std::make_unique<FakeStore>(shared));
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  ledger->Append(Row("gate", kDec1Ms), [&](const Status&) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release; });
  });
  std::map<std::string, Status> results;
  std::mutex results_mu;
  for (int i = 0; i < 6; ++i) {
    const std::string id = fmt::format("b{}", i);
    ledger->Append(Row(id, kDec1Ms), [&, id](const Status& st) {
      std::lock_guard lock(results_mu);
      results[id] = st;
    });
  }
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  ledger->Flush();
  ASSERT_EQ(results.size(), 6u);
  for (auto& [id, st] : results) {
    EXPECT_EQ(st.ok(), id != "b3") << id << " " << st.ToString();
  }
  EXPECT_EQ(*ledger->CountRows(), 6);  // gate + five
  const LedgerStats stats = ledger->Stats();
  EXPECT_EQ(stats.rows_appended, 7);
  EXPECT_EQ(stats.rows_committed, 6);
  EXPECT_EQ(stats.rows_failed, 1);
}

TEST(GroupCommitLedgerTest, AStoreDownFailsTheBatchOnceWithoutRetryingRowByRow) {
  auto shared = std::make_shared<FakeStore::Shared>();
  shared->down = true;
  auto ledger = NewGroupCommitLedger(std::make_unique<FakeStore>(shared));
  std::atomic<int> failed{0};
  for (int i = 0; i < 50; ++i) {
    ledger->Append(Row(fmt::format("d{}", i), kDec1Ms), [&](const Status& st) {
      if (st.code() == StatusCode::kUnavailable) ++failed;
    });
  }
  ledger->Flush();
  EXPECT_EQ(failed.load(), 50);
  std::lock_guard lock(shared->mu);
  size_t tried = 0;
  for (size_t n : shared->batch_sizes) tried += n;
  EXPECT_EQ(tried, 50u);  // each row tried once: no row-by-row storm against a dead store
  EXPECT_EQ(ledger->Stats().rows_failed, 50);
}

// The database goes away: rows are spooled (fsynced, the callbacks say ok)
// and written, once each, when it is back; a spool left by a killed process
// is written by the next.
TEST(GroupCommitLedgerTest, RowsWaitInTheSpoolWhileTheStoreIsDown) {
  std::string tmpl = (fs::temp_directory_path() / "brisk-spool-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string spool = tmpl + "/spool.jsonl";
  auto shared = std::make_shared<FakeStore::Shared>();
  shared->down = true;
  {
    auto ledger = NewGroupCommitLedger(std::make_unique<FakeStore>(shared), spool);
    std::atomic<int> ok{0};
    for (int i = 0; i < 50; ++i) {
      LedgerRow r = Row(fmt::format("s{}", i), kDec1Ms);
      r.cost_usd = 0.25;
      r.finish_reason = "stop \"quoted\"";
      ledger->Append(r, [&](const Status& st) { ok += st.ok(); });
    }
    ledger->Flush();
    EXPECT_EQ(ok.load(), 50);
    EXPECT_EQ(ledger->Stats().rows_spooled, 50);
    EXPECT_EQ(ledger->Stats().spool_rows, 50);
    {
      std::lock_guard lock(shared->mu);
      shared->down = false;
    }
    for (int i = 0; i < 40 && ledger->Stats().spool_rows > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(ledger->Stats().spool_rows, 0);
    EXPECT_EQ(ledger->Stats().rows_unspooled, 50);
    std::lock_guard lock(shared->mu);
    EXPECT_EQ(std::set<std::string>(shared->committed.begin(), shared->committed.end()).size(),
              50u);
    EXPECT_EQ(shared->committed.size(), 50u);
  }
  EXPECT_EQ(fs::file_size(spool), 0u);
  // A spool from a killed process (its last line cut mid-write) is written at start.
  {
    std::ofstream out(spool);
    out << R"({"time_unix_ms":1,"request_id":"left-1","tenant":"","api_key_name":"",)"
           R"("feature":"","tier":"small","upstream":"","model":"m","endpoint":"responses",)"
           R"("prompt_tokens":3,"cached_tokens":0,"completion_tokens":2,"cost_usd":0.5,)"
           R"("status":200,"outcome":"completed","stream":false,"ttft_ms":-1.0,"total_ms":5.0,)"
           R"("attempts":1,"escalations":0,"finish_reason":"stop","shadow":false,"rollout":""})"
        << "\n{\"time_unix_ms\":2,\"request_";
  }
  auto again = std::make_shared<FakeStore::Shared>();
  auto ledger = NewGroupCommitLedger(std::make_unique<FakeStore>(again), spool);
  EXPECT_EQ(ledger->Stats().spool_rows, 2);
  for (int i = 0; i < 40 && ledger->Stats().spool_rows > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::lock_guard lock(again->mu);
  EXPECT_EQ(again->committed, std::vector<std::string>{"left-1"});
  fs::remove_all(tmpl);
}

TEST(GroupCommitLedgerTest, BatchesNeverExceedTheLimitAndKeepOrder) {
  auto shared = std::make_shared<FakeStore::Shared>();
  auto ledger = NewGroupCommitLedger(std::make_unique<FakeStore>(shared));
  for (int i = 0; i < 3 * kLedgerMaxBatchRows; ++i) {
    ledger->Append(Row(std::to_string(i), kDec1Ms), nullptr);  // a null callback is allowed
  }
  ledger->Flush();
  std::lock_guard lock(shared->mu);
  for (size_t n : shared->batch_sizes) EXPECT_LE(n, static_cast<size_t>(kLedgerMaxBatchRows));
  ASSERT_EQ(shared->committed.size(), static_cast<size_t>(3 * kLedgerMaxBatchRows));
  for (size_t i = 0; i < shared->committed.size(); ++i) {
    ASSERT_EQ(shared->committed[i], std::to_string(i));
  }
}

TEST(GroupCommitLedgerTest, NonFiniteNumbersAreStoredAsDefaults) {
  class Capture : public FakeStore {
   public:
    using FakeStore::FakeStore;
    Status InsertBatch(std::span<const LedgerRow> rows) override {
      for (const LedgerRow& r : rows) seen.push_back(r);
      return Status::Ok();
    }
    std::vector<LedgerRow> seen;
  };
  auto store = std::make_unique<Capture>(std::make_shared<FakeStore::Shared>());
  Capture* capture = store.get();
  auto ledger = NewGroupCommitLedger(std::move(store));
  LedgerRow r = Row("nan", kDec1Ms);
  r.cost_usd = std::nan("");
  r.ttft_ms = INFINITY;
  ledger->Append(r, nullptr);
  ledger->Flush();
  ASSERT_EQ(capture->seen.size(), 1u);
  EXPECT_EQ(capture->seen[0].cost_usd, 0);
  EXPECT_EQ(capture->seen[0].ttft_ms, -1);
}

TEST(LedgerUrlTest, PasswordsAreRedacted) {
  EXPECT_EQ(RedactLedgerUrl("postgresql://brisk:s3cret@db.internal:5432/ledger"),
            "postgresql://brisk:***@db.internal:5432/ledger");
  EXPECT_EQ(RedactLedgerUrl("postgres://u:p@ss/w@h/db"), "postgres://u:***@h/db");
  EXPECT_EQ(RedactLedgerUrl("postgresql://u@h:5432/db"), "postgresql://u@h:5432/db");
  EXPECT_EQ(RedactLedgerUrl("postgresql://h/db?user=u&password=pw&sslmode=require"),
            "postgresql://h/db?user=u&password=***&sslmode=require");
  EXPECT_EQ(RedactLedgerUrl("host=h PASSWORD='a b' dbname=x"), "host=h PASSWORD=*** dbname=x");
  EXPECT_EQ(RedactLedgerUrl("/var/lib/brisk/ledger.db"), "/var/lib/brisk/ledger.db");
}

}  // namespace
}  // namespace brisk::gateway
