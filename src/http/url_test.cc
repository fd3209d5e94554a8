#include "http/url.h"

#include <gtest/gtest.h>

namespace brisk::http {
namespace {

TEST(ParseUrl, Forms) {
  auto u = ParseUrl("http://127.0.0.1:8000");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, "8000");
  EXPECT_EQ(u->base_path, "");
  u = ParseUrl("http://localhost/v1/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, "80");
  EXPECT_EQ(u->base_path, "");
  u = ParseUrl("http://[::1]:9000/proxy/v1");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->base_path, "/proxy");
  EXPECT_EQ(u->ToString(), "http://[::1]:9000/proxy");
  EXPECT_FALSE(ParseUrl("https://x").ok());
  EXPECT_FALSE(ParseUrl("127.0.0.1:8000").ok());
  EXPECT_FALSE(ParseUrl("http://:80").ok());
  EXPECT_FALSE(ParseUrl("http://host:80a").ok());
}

}  // namespace
}  // namespace brisk::http
