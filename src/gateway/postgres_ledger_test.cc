// The cost ledger on a real PostgreSQL server, started for this test program
// by scripts/pg_test_server.sh (Debian's postgresql; as root the server runs
// as the `postgres` user). Each test gets a database of its own. Without
// PostgreSQL installed the tests skip, or fail when CI is set.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gateway/ledger.h"
#include "gateway/ledger_store.h"
#include "gateway/ledger_test_util.h"
#include "gateway/pg_test_util.h"
#include "util/test_support.h"

namespace brisk::gateway {
namespace {

namespace fs = std::filesystem;
using test::FreePort;
using test::kDec1Ms;
using test::kScript;
using test::Row;
using test::RunShell;
using test::Sql;

class PostgresLedgerTest : public test::PostgresTest {
 protected:
  std::unique_ptr<Ledger> Open(LedgerMode mode = LedgerMode::kReadWrite) {
    auto ledger = OpenLedger(url_, mode);
    EXPECT_TRUE(ledger.ok()) << ledger.status().ToString();
    return ledger.ok() ? std::move(ledger).value() : nullptr;
  }
};

TEST_F(PostgresLedgerTest, AppendsAreRowsAfterFlush) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  EXPECT_STREQ(ledger->kind(), "postgresql");
  test::CheckAppendFlushCount(*ledger);
}

TEST_F(PostgresLedgerTest, DuplicateRequestIdIsIgnored) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckDuplicatesIgnored(*ledger);
}

TEST_F(PostgresLedgerTest, RollupsByFeatureTierTenantAndDay) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckRollups(*ledger);
}

TEST_F(PostgresLedgerTest, SpendSince) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckSpendSince(*ledger);
}

TEST_F(PostgresLedgerTest, ShadowRowsAreApartFromTheBill) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckShadowRows(*ledger);
}

// A ledger table created by a gateway from before rollouts (that version's
// DDL, verbatim): read-only it reads as callers' rows outside any rollout;
// read-write it gains the shadow and rollout columns, keeping its rows.
TEST_F(PostgresLedgerTest, AnOlderTableIsUpgradedOnOpen) {
  ASSERT_EQ(Sql(url_, R"sql(
CREATE TABLE brisk_ledger (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, time_unix_ms BIGINT NOT NULL,
  request_id TEXT NOT NULL UNIQUE, tenant TEXT NOT NULL, api_key_name TEXT NOT NULL,
  feature TEXT NOT NULL, tier TEXT NOT NULL, upstream TEXT NOT NULL, model TEXT NOT NULL,
  endpoint TEXT NOT NULL, prompt_tokens BIGINT NOT NULL, cached_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL, cost_usd DOUBLE PRECISION NOT NULL,
  status INTEGER NOT NULL, outcome TEXT NOT NULL, stream BOOLEAN NOT NULL,
  ttft_ms DOUBLE PRECISION NOT NULL, total_ms DOUBLE PRECISION NOT NULL,
  attempts INTEGER NOT NULL, escalations INTEGER NOT NULL, finish_reason TEXT NOT NULL);
CREATE INDEX brisk_ledger_time ON brisk_ledger (time_unix_ms);
INSERT INTO brisk_ledger (time_unix_ms, request_id, tenant, api_key_name, feature, tier,
  upstream, model, endpoint, prompt_tokens, cached_tokens, completion_tokens, cost_usd, status,
  outcome, stream, ttft_ms, total_ms, attempts, escalations, finish_reason)
VALUES (1796083200000, 'old-1', 'acme', 'acme-key', 'chat', 'small', 'u', 'm',
  'chat.completions', 100, 20, 50, 0.25, 200, 'completed', true, 12.5, 240.25, 1, 0, 'stop'))sql"),
            "");
  {
    auto ro = Open(LedgerMode::kReadOnly);
    ASSERT_TRUE(ro);
    ASSERT_NO_FATAL_FAILURE(test::CheckOlderTableReadsAsCallers(*ro));
  }
  EXPECT_EQ(Sql(url_,
                "SELECT count(*) FROM information_schema.columns WHERE table_name = "
                "'brisk_ledger'"),
            std::to_string(kLedgerColumnCount - 1));  // read-only added nothing
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  EXPECT_EQ(Sql(url_,
                "SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable || ' ' "
                "|| column_default, ', ' ORDER BY column_name) FROM information_schema.columns "
                "WHERE table_name = 'brisk_ledger' AND column_name IN ('shadow', 'rollout')"),
            "rollout text NO ''::text, shadow boolean NO false");
  EXPECT_EQ(Sql(url_,
                "SELECT shadow || '|' || rollout FROM brisk_ledger WHERE request_id = "
                "'old-1'"),
            "false|");
  ASSERT_NO_FATAL_FAILURE(test::CheckShadowOnUpgradedTable(*ledger));
  ledger.reset();
  ASSERT_TRUE(Open());  // a second open finds nothing to add
  EXPECT_EQ(*Open(LedgerMode::kReadOnly)->CountRows(), 2);
}

TEST_F(PostgresLedgerTest, CallbacksFireAfterTheRowIsReadable) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  auto reader = Open(LedgerMode::kReadOnly);
  ASSERT_TRUE(reader);
  test::CheckCallbacksAfterCommit(*ledger, *reader);
}

TEST_F(PostgresLedgerTest, TenThousandRowsInFewTransactions) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckLargeBatch(*ledger);
}

TEST_F(PostgresLedgerTest, TextIsStoredAsValidUtf8) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  test::CheckTextCleaned(*ledger);
}

TEST_F(PostgresLedgerTest, ReopeningSeesTheRowsAndClosingCommitsTheQueue) {
  {
    auto ledger = Open();
    ASSERT_TRUE(ledger);
    for (int i = 0; i < 700; ++i) ledger->Append(Row(fmt::format("r{}", i), kDec1Ms + i), nullptr);
  }
  for (LedgerMode mode : {LedgerMode::kReadWrite, LedgerMode::kReadOnly}) {
    auto again = Open(mode);
    ASSERT_TRUE(again);
    auto n = again->CountRows();
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, 700);
  }
  // Every column is there, with its value.
  EXPECT_EQ(Sql(url_,
                "SELECT count(*) FROM information_schema.columns WHERE table_name = "
                "'brisk_ledger'"),
            std::to_string(kLedgerColumnCount + 1));  // + id
  EXPECT_EQ(Sql(url_,
                "SELECT concat_ws('|', tenant, api_key_name, feature, tier, upstream, "
                "model, endpoint, prompt_tokens, cached_tokens, completion_tokens, status, "
                "outcome, stream, ttft_ms, total_ms, attempts, escalations, finish_reason, "
                "shadow, rollout) FROM brisk_ledger WHERE request_id = 'r5'"),
            "acme|acme-key|chat|small|127.0.0.1:9001|SmolLM2-135M-Instruct.Q4_1|chat.completions|"
            "100|20|50|200|completed|t|12.5|240.25|1|0|stop|f|");
  const LedgerRow r5 = Row("r5", kDec1Ms + 5);
  EXPECT_EQ(std::stod(Sql(url_, "SELECT cost_usd FROM brisk_ledger WHERE request_id = 'r5'")),
            r5.cost_usd);
}

TEST_F(PostgresLedgerTest, ALostConnectionIsReopened) {
  auto ledger = Open();
  ASSERT_TRUE(ledger);
  EXPECT_EQ(test::AppendAll(*ledger, {Row("before", kDec1Ms)}), 1);
  // Kill the ledger's server processes (both connections), as a server
  // restart or a failover would.
  EXPECT_EQ(Sql(url_,
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                "application_name = 'brisk-ledger'"),
            "2");
  EXPECT_EQ(test::AppendAll(*ledger, {Row("after", kDec1Ms)}), 1);
  auto n = ledger->CountRows();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2);
}

TEST_F(PostgresLedgerTest, ErrorsNameTheServerButNeverThePassword) {
  const int port = FreePort();  // nothing listens there
  const std::string url = fmt::format("postgresql://brisk:s3cret@127.0.0.1:{}/ledger", port);
  auto ledger = OpenLedger(url);
  ASSERT_FALSE(ledger.ok());
  const std::string& m = ledger.status().message();
  EXPECT_EQ(ledger.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(m.find(fmt::format("cannot connect to PostgreSQL ledger "
                               "'postgresql://brisk:***@127.0.0.1:{}/ledger'",
                               port)),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("refused"), std::string::npos) << m;  // libpq's reason
  EXPECT_EQ(m.find("s3cret"), std::string::npos) << m;

  // A database that does not exist: libpq's reason.
  auto no_db = OpenLedger(server_url_.substr(0, server_url_.rfind('/') + 1) + "no_such_db");
  ASSERT_FALSE(no_db.ok());
  EXPECT_NE(no_db.status().message().find("no_such_db"), std::string::npos)
      << no_db.status().message();

  // Read-only on a database without the table.
  auto ro = OpenLedger(url_, LedgerMode::kReadOnly);
  ASSERT_FALSE(ro.ok());
  EXPECT_NE(ro.status().message().find("no brisk_ledger table"), std::string::npos)
      << ro.status().message();
}

TEST_F(PostgresLedgerTest, TwoGatewaysShareOneLedger) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a && b);
  std::vector<LedgerRow> rows = test::MixedRows(400, 3, kDec1Ms, 2);
  std::vector<LedgerRow> first(rows.begin(), rows.begin() + 250);
  std::vector<LedgerRow> second(rows.begin() + 150, rows.end());  // 100 rows written by both
  std::thread t([&] { EXPECT_EQ(test::AppendAll(*a, first), 250); });
  EXPECT_EQ(test::AppendAll(*b, second), 250);
  t.join();
  EXPECT_EQ(*a->CountRows(), 400);
  CostQuery q;
  q.group_by = GroupBy::kTenant;
  q.by_day = true;
  auto got = b->Query(q);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  test::ExpectSameGroups(*got, test::ExpectedRollup(rows, q));
}

}  // namespace
}  // namespace brisk::gateway
