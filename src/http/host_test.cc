#include "http/host.h"

#include <gtest/gtest.h>

namespace brisk::http {
namespace {

TEST(HttpHost, HostNameStripsPortBracketsAndCase) {
  EXPECT_EQ(HostName("LocalHost:8000"), "localhost");
  EXPECT_EQ(HostName("localhost."), "localhost");
  EXPECT_EQ(HostName(" 127.0.0.1 "), "127.0.0.1");
  EXPECT_EQ(HostName("[::1]"), "::1");
  EXPECT_EQ(HostName("[::1]:80"), "::1");
  EXPECT_EQ(HostName("::1"), "::1");
  EXPECT_EQ(HostName("[FE80::1]"), "fe80::1");
  for (std::string_view bad :
       {"", ":80", "a:b", "a:123456", "[::1", "[::1]x", "[]", "a b", "a/b", "[::1]:", "a@b"}) {
    EXPECT_FALSE(HostName(bad)) << bad;
  }
}

TEST(HttpHost, HostAllowedMatchesNamesNotPorts) {
  const std::vector<std::string> allowed = {"localhost", "127.0.0.1", "[::1]", "my.host"};
  for (std::string_view ok : {"localhost", "localhost:1", "LOCALHOST", "127.0.0.1:8000",
                              "[::1]:8000", "[::1]", "my.host:443"}) {
    EXPECT_TRUE(HostAllowed(ok, allowed)) << ok;
  }
  for (std::string_view bad : {"evil.com", "localhost.evil.com", "127.0.0.2", "[::2]",
                               "my.host.evil", "", "localhost:x"}) {
    EXPECT_FALSE(HostAllowed(bad, allowed)) << bad;
  }
  EXPECT_TRUE(HostAllowed("anything:1", {}));
  EXPECT_FALSE(HostAllowed("bad host", {}));
  EXPECT_TRUE(HostAllowed("[::1]", {"::1"}));
}

}  // namespace
}  // namespace brisk::http
