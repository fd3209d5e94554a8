#include "gateway/fleet_members.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "gateway/pg_test_util.h"

namespace brisk::gateway {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<FleetMembers> Open(const std::string& url) {
  auto db = OpenSqlDb(url);
  if (!db.ok()) return nullptr;
  auto m = FleetMembers::Open(std::move(*db));
  return m.ok() ? std::move(*m) : nullptr;
}

FleetMember Member(const std::string& instance, int64_t seen_ms, int64_t requests = 0) {
  FleetMember m;
  m.instance = instance;
  m.address = "10.0.0.1:8080";
  m.started_ms = 1000;
  m.seen_ms = seen_ms;
  m.requests_total = requests;
  return m;
}

// Two gateways on one database list each other; a heartbeat replaces the row,
// a gateway gone quiet is not listed, and one gone for a day is deleted.
void ListsEachOther(const std::string& url) {
  auto a = Open(url);
  auto b = Open(url);
  ASSERT_TRUE(a && b);
  const int64_t now = 100'000'000'000;
  ASSERT_TRUE(a->Heartbeat(Member("aaaa", now - 500, 1)).ok());
  ASSERT_TRUE(b->Heartbeat(Member("bbbb", now - 200, 2)).ok());
  ASSERT_TRUE(a->Heartbeat(Member("aaaa", now - 100, 7)).ok());
  ASSERT_TRUE(a->Heartbeat(Member("gone", now - 60'000)).ok());
  ASSERT_TRUE(a->Heartbeat(Member("long-gone", now - 2LL * 24 * 3600 * 1000)).ok());
  auto listed = b->List(now - 10'000, now);
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].instance, "aaaa");
  EXPECT_EQ((*listed)[0].requests_total, 7);
  EXPECT_EQ((*listed)[1].instance, "bbbb");
  auto all = a->List(0, now);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);  // "long-gone" was deleted
  const auto j = FleetMemberJson((*listed)[1], now, "bbbb");
  EXPECT_TRUE(j["this_gateway"].get<bool>());
  EXPECT_DOUBLE_EQ(j["seconds_since_seen"].get<double>(), 0.2);
}

TEST(FleetMembersTest, SqliteListsEachOther) {
  const auto path = fs::temp_directory_path() / fmt::format("brisk-fleet-{}.db", getpid());
  fs::remove(path);
  ListsEachOther("sqlite://" + path.string());
  for (const char* ext : {"", "-wal", "-shm"}) fs::remove(path.string() + ext);
}

class PostgresFleetMembersTest : public test::PostgresTest {};

TEST_F(PostgresFleetMembersTest, ListsEachOther) { ListsEachOther(url_); }

TEST(FleetViewTest, KeepsTheLastListsWhileTheDatabaseIsAway) {
  FleetView v;
  v.Store(nlohmann::json::array({{{"instance", "a"}}}), nlohmann::json::array({1}), true);
  v.Store(v.Snapshot()["gateways"], nullptr, false);
  const auto s = v.Snapshot();
  EXPECT_EQ(s["database"], "unreachable");
  EXPECT_EQ(s["gateways"].size(), 1u);
  EXPECT_EQ(s["decisions"].size(), 1u);
}

}  // namespace
}  // namespace brisk::gateway
