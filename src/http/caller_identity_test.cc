#include "http/caller_identity.h"

#include <gtest/gtest.h>

#include <vector>

namespace brisk {
namespace {

TEST(CallerIdentity, BearerTokenFollowsRfc9110) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer abc"), "abc");
  EXPECT_EQ(BearerToken("BEARER abc"), "abc");  // the scheme is case-insensitive
  EXPECT_EQ(BearerToken("BeArEr abc"), "abc");
  EXPECT_EQ(BearerToken("Bearer   abc"), "abc");    // 1*SP
  EXPECT_EQ(BearerToken(" Bearer abc \t"), "abc");  // OWS around the field value
  EXPECT_EQ(BearerToken("Bearer sk-a.b_c~d+e/f=="), "sk-a.b_c~d+e/f==");
  EXPECT_FALSE(BearerToken("Bearer\tabc"));  // a tab is not SP
  EXPECT_FALSE(BearerToken("Bearer \tabc"));
  EXPECT_FALSE(BearerToken("Bearer"));
  EXPECT_FALSE(BearerToken("Bearer "));
  EXPECT_FALSE(BearerToken("Bearer    "));
  EXPECT_FALSE(BearerToken("Basic abc"));
  EXPECT_FALSE(BearerToken("Bearerabc"));
  EXPECT_FALSE(BearerToken("abc"));  // no scheme
  EXPECT_FALSE(BearerToken(""));
}

TEST(CallerIdentity, ResolvesTheConfiguredKey) {
  std::vector<ApiKeyConfig> keys(2);
  keys[0].key = "alpha";
  keys[0].tenant = "a";
  keys[1].key = "beta";
  keys[1].tenant = "b";
  keys[1].name = "beta-key";
  const ApiKeyConfig* k = ResolveCaller(keys, "bearer  beta");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->tenant, "b");
  EXPECT_EQ(k->name, "beta-key");
  EXPECT_EQ(ResolveCaller(keys, "Bearer alpha"), &keys[0]);
  EXPECT_EQ(ResolveCaller(keys, "Bearer alph"), nullptr);
  EXPECT_EQ(ResolveCaller(keys, "Bearer alphaa"), nullptr);
  EXPECT_EQ(ResolveCaller(keys, "alpha"), nullptr);
  EXPECT_EQ(ResolveCaller(keys, ""), nullptr);
  EXPECT_EQ(ResolveCaller({}, "Bearer alpha"), nullptr);
  EXPECT_EQ(FindApiKey(keys, ""), nullptr);
}

TEST(CallerIdentity, UnauthorizedSaysWhatIsMissing) {
  const http::OpenAiError missing = UnauthorizedError("");
  EXPECT_EQ(missing.http_status, 401);
  EXPECT_EQ(missing.code, "invalid_api_key");
  EXPECT_NE(missing.message.find("Missing API key"), std::string::npos);
  EXPECT_NE(UnauthorizedError("Bearer nope").message.find("Incorrect"), std::string::npos);
}

}  // namespace
}  // namespace brisk
