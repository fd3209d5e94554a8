#include "server/response_store.h"

#include <gtest/gtest.h>

namespace brisk {
namespace {

using Json = nlohmann::ordered_json;
using std::chrono::steady_clock;

Json Msgs(const std::string& text) { return Json::array({{{"role", "user"}, {"content", text}}}); }

TEST(ResponseStoreTest, PutGetEraseByTenant) {
  ResponseStore store;
  EXPECT_TRUE(store.Put("a", "resp_1", Json{{"id", "resp_1"}}, Msgs("hi")));
  auto got = store.Get("a", "resp_1");
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->response["id"], "resp_1");
  EXPECT_EQ(got->messages[0]["content"], "hi");
  // Another tenant sees nothing and cannot delete it.
  EXPECT_EQ(store.Get("b", "resp_1"), nullptr);
  EXPECT_FALSE(store.Erase("b", "resp_1"));
  EXPECT_EQ(store.Get("", "resp_1"), nullptr);
  EXPECT_TRUE(store.Erase("a", "resp_1"));
  EXPECT_EQ(store.Get("a", "resp_1"), nullptr);
  EXPECT_FALSE(store.Erase("a", "resp_1"));
  EXPECT_EQ(store.entries("a"), 0u);
  EXPECT_EQ(store.bytes("a"), 0u);
}

TEST(ResponseStoreTest, EvictsLeastRecentlyUsedByCount) {
  ResponseStore::Limits limits;
  limits.max_entries = 2;
  ResponseStore store(limits);
  store.Put("t", "r1", Json::object(), Msgs("1"));
  store.Put("t", "r2", Json::object(), Msgs("2"));
  ASSERT_NE(store.Get("t", "r1"), nullptr);  // r1 now most recent
  store.Put("t", "r3", Json::object(), Msgs("3"));
  EXPECT_NE(store.Get("t", "r1"), nullptr);
  EXPECT_EQ(store.Get("t", "r2"), nullptr);
  EXPECT_NE(store.Get("t", "r3"), nullptr);
  EXPECT_EQ(store.entries("t"), 2u);
  // Another tenant's entries do not count against this one's.
  store.Put("u", "r4", Json::object(), Msgs("4"));
  EXPECT_EQ(store.entries("t"), 2u);
}

TEST(ResponseStoreTest, EvictsByBytesAndRefusesOversizedEntries) {
  ResponseStore::Limits limits;
  limits.max_bytes = 300;
  ResponseStore store(limits);
  const std::string big(100, 'x');
  store.Put("t", "r1", Json{{"t", big}}, Msgs(""));
  store.Put("t", "r2", Json{{"t", big}}, Msgs(""));
  EXPECT_LE(store.bytes("t"), 300u);
  store.Put("t", "r3", Json{{"t", big}}, Msgs(""));
  EXPECT_LE(store.bytes("t"), 300u);
  EXPECT_EQ(store.Get("t", "r1"), nullptr);
  EXPECT_NE(store.Get("t", "r3"), nullptr);
  EXPECT_FALSE(store.Put("t", "huge", Json{{"t", std::string(400, 'y')}}, Msgs("")));
  EXPECT_EQ(store.Get("t", "huge"), nullptr);
}

TEST(ResponseStoreTest, ReplacingAnIdKeepsOneEntry) {
  ResponseStore store;
  store.Put("t", "r1", Json{{"v", 1}}, Msgs("a"));
  store.Put("t", "r1", Json{{"v", 2}}, Msgs("b"));
  EXPECT_EQ(store.entries("t"), 1u);
  EXPECT_EQ(store.Get("t", "r1")->response["v"], 2);
}

TEST(ResponseStoreTest, EntriesExpire) {
  auto now = steady_clock::time_point{} + std::chrono::hours(1);
  ResponseStore store({.ttl = std::chrono::seconds(60), .now = [&] { return now; }});
  store.Put("t", "r1", Json::object(), Msgs("a"));
  now += std::chrono::seconds(59);
  EXPECT_NE(store.Get("t", "r1"), nullptr);
  now += std::chrono::seconds(2);
  EXPECT_EQ(store.Get("t", "r1"), nullptr);
  EXPECT_EQ(store.entries("t"), 0u);
}

}  // namespace
}  // namespace brisk
