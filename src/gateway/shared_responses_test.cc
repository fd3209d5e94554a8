// The Responses API's shared store on SQLite and on a real PostgreSQL: the
// same checks on both, plus two gateways' stores on one database.
#include "gateway/shared_responses.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "gateway/pg_test_util.h"

namespace brisk::gateway {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kNow = 1'764'547'200'000;  // 2025-12-01T00:00:00Z

StoredResponseText Text(const std::string& id, size_t pad = 0) {
  return {R"({"id":")" + id + R"("})", "[]", "[" + std::string(pad, ' ') + "]"};
}

std::unique_ptr<SharedResponseStore> OpenStore(const std::string& url, ResponseStoreLimits limits) {
  auto db = OpenSqlDb(url);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  if (!db.ok()) return nullptr;
  auto store = SharedResponseStore::Open(std::move(db).value(), limits);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

void CheckPutGetErase(SharedResponseStore& s) {
  ASSERT_TRUE(
      s.Put("acme", "resp_1", {R"({"id":"resp_1"})", R"([{"id":"msg_1"}])", "[1,2]"}, kNow).ok());
  auto got = s.Get("acme", "resp_1", kNow + 1);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->response, R"({"id":"resp_1"})");
  EXPECT_EQ((*got)->input_items, R"([{"id":"msg_1"}])");
  EXPECT_EQ((*got)->conversation, "[1,2]");
  // Another tenant does not see it, nor erase it.
  EXPECT_FALSE(s.Get("globex", "resp_1", kNow + 1)->has_value());
  EXPECT_FALSE(*s.Erase("globex", "resp_1"));
  // Replacing keeps one entry.
  ASSERT_TRUE(s.Put("acme", "resp_1", Text("resp_1"), kNow + 2).ok());
  EXPECT_EQ(s.Usage("acme")->first, 1);
  EXPECT_TRUE(*s.Erase("acme", "resp_1"));
  EXPECT_FALSE(*s.Erase("acme", "resp_1"));
  EXPECT_FALSE(s.Get("acme", "resp_1", kNow + 3)->has_value());
  // Values are bound, never pasted.
  const std::string odd = "it's \"quoted\"; DROP TABLE brisk_responses; --";
  ASSERT_TRUE(s.Put(odd, odd, {odd, odd, odd}, kNow).ok());
  EXPECT_EQ((*s.Get(odd, odd, kNow))->conversation, odd);
}

void CheckBounds(SharedResponseStore& s) {
  // max_entries 3: the oldest goes first; other tenants are untouched.
  ASSERT_TRUE(s.Put("other", "resp_o", Text("resp_o"), kNow).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(s.Put("acme", "resp_" + std::to_string(i), Text("x"), kNow + i).ok());
  }
  EXPECT_EQ(s.Usage("acme")->first, 3);
  EXPECT_FALSE(s.Get("acme", "resp_1", kNow + 10)->has_value());
  EXPECT_TRUE(s.Get("acme", "resp_2", kNow + 10)->has_value());
  EXPECT_TRUE(s.Get("other", "resp_o", kNow + 10)->has_value());
  // max_bytes 400: a large entry pushes out older ones until the total fits.
  ASSERT_TRUE(s.Put("acme", "resp_big", Text("x", 300), kNow + 20).ok());
  auto usage = s.Usage("acme");
  EXPECT_LE(usage->second, 400);
  EXPECT_TRUE(s.Get("acme", "resp_big", kNow + 21)->has_value());
  EXPECT_FALSE(s.Get("acme", "resp_2", kNow + 21)->has_value());
  // Larger than the bound on its own: refused, nothing evicted for it.
  Status st = s.Put("acme", "resp_huge", Text("x", 500), kNow + 30);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(s.Get("acme", "resp_big", kNow + 31)->has_value());
  // ttl 60 s: gone after it.
  EXPECT_TRUE(s.Get("acme", "resp_big", kNow + 20 + 59'999)->has_value());
  EXPECT_FALSE(s.Get("acme", "resp_big", kNow + 20 + 60'000)->has_value());
}

constexpr ResponseStoreLimits kSmall{.max_entries = 3, .max_bytes = 400, .ttl_s = 60};

class SqliteResponsesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() /
             fmt::format("brisk-responses-{}-{}.db", getpid(),
                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove(path_);
  }
  void TearDown() override {
    for (const char* ext : {"", "-wal", "-shm"}) fs::remove(path_ + ext);
  }
  std::string path_;
};

TEST_F(SqliteResponsesTest, PutGetErase) {
  auto s = OpenStore("sqlite://" + path_, {});
  ASSERT_TRUE(s);
  CheckPutGetErase(*s);
}

TEST_F(SqliteResponsesTest, Bounds) {
  auto s = OpenStore(path_, kSmall);
  ASSERT_TRUE(s);
  CheckBounds(*s);
}

TEST_F(SqliteResponsesTest, SurvivesReopening) {
  {
    auto s = OpenStore(path_, {});
    ASSERT_TRUE(s->Put("", "resp_a", Text("resp_a"), kNow).ok());
  }
  auto s = OpenStore(path_, {});
  EXPECT_TRUE(s->Get("", "resp_a", kNow)->has_value());
}

TEST(SqlDbTest, BadUrls) {
  EXPECT_EQ(OpenSqlDb("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenSqlDb("mysql://x/y").status().code(), StatusCode::kInvalidArgument);
  auto dir = OpenSqlDb("/nonexistent-dir/x.db");
  EXPECT_EQ(dir.status().code(), StatusCode::kUnavailable);
}

class PostgresResponsesTest : public test::PostgresTest {};

TEST_F(PostgresResponsesTest, PutGetErase) {
  auto s = OpenStore(url_, {});
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->postgres());
  CheckPutGetErase(*s);
}

TEST_F(PostgresResponsesTest, Bounds) {
  auto s = OpenStore(url_, kSmall);
  ASSERT_TRUE(s);
  CheckBounds(*s);
}

// Two gateways open the same database at once (one creates the table), then
// each reads what the other stored.
TEST_F(PostgresResponsesTest, TwoGatewaysShareOneStore) {
  std::unique_ptr<SharedResponseStore> a, b;
  std::thread ta([&] { a = OpenStore(url_, {}); });
  std::thread tb([&] { b = OpenStore(url_, {}); });
  ta.join();
  tb.join();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->Put("acme", "resp_a", Text("resp_a"), kNow).ok());
  ASSERT_TRUE(b->Put("acme", "resp_b", Text("resp_b"), kNow).ok());
  EXPECT_TRUE(b->Get("acme", "resp_a", kNow)->has_value());
  EXPECT_TRUE(a->Get("acme", "resp_b", kNow)->has_value());
  EXPECT_TRUE(*b->Erase("acme", "resp_a"));
  EXPECT_FALSE(a->Get("acme", "resp_a", kNow)->has_value());
}

// The server restarts under an open store: the next statement fails or
// reconnects, and once the server is back the store works again without
// being reopened.
TEST_F(PostgresResponsesTest, ReconnectsAfterTheServerRestarts) {
  auto s = OpenStore(url_, {});
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Put("", "resp_1", Text("resp_1"), kNow).ok());
  // Every connection of this test's database is cut (as a restart does).
  EXPECT_NE(test::Sql(server_url_,
                      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE datname = '" +
                          db_ + "'"),
            "");
  auto got = s->Get("", "resp_1", kNow);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->has_value());
}

TEST_F(PostgresResponsesTest, UnreachableServerIsUnavailable) {
  const int port = test::FreePort();
  auto db = OpenSqlDb(fmt::format("postgresql://postgres:secret@127.0.0.1:{}/x", port));
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(db.status().message().find("secret"), std::string::npos) << db.status().message();
}

}  // namespace
}  // namespace brisk::gateway
