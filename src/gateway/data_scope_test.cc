#include "gateway/data_scope.h"

#include <gtest/gtest.h>

namespace brisk::gateway {
namespace {

ApiKeyConfig Key(std::string key, std::string tenant, std::string name, bool admin = false) {
  ApiKeyConfig k;
  k.key = std::move(key);
  k.tenant = std::move(tenant);
  k.name = std::move(name);
  k.admin = admin;
  return k;
}

GatewayConfig TwoTenants() {
  GatewayConfig c;
  c.keys = {Key("sk-a1", "a", "a-ci"), Key("sk-a2", "a", "a-web"), Key("sk-b", "b", "b-ci"),
            Key("sk-ops", "ops", "ops", /*admin=*/true)};
  c.rollout.admin_key = "sk-rollout-admin";
  return c;
}

TEST(DataScopeTest, ATenantKeyReadsItsOwnTenantWithAllItsKeys) {
  const GatewayConfig c = TwoTenants();
  auto a = ResolveDataScope(c, "Bearer sk-a2");
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->all);
  EXPECT_EQ(a->tenant, "a");
  EXPECT_EQ(a->key_names, (std::vector<std::string>{"a-ci", "a-web"}));
  EXPECT_EQ(a->Describe(), "tenant:a");
  auto b = ResolveDataScope(c, "bearer  sk-b");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->tenant, "b");
  EXPECT_EQ(b->key_names, (std::vector<std::string>{"b-ci"}));
}

TEST(DataScopeTest, AdminKeysReadEveryTenant) {
  const GatewayConfig c = TwoTenants();
  for (const char* auth : {"Bearer sk-ops", "Bearer sk-rollout-admin"}) {
    auto s = ResolveDataScope(c, auth);
    ASSERT_TRUE(s.has_value()) << auth;
    EXPECT_TRUE(s->all) << auth;
    EXPECT_EQ(s->Describe(), "all");
  }
}

TEST(DataScopeTest, NoKeyOrAnotherKeyIsRefused) {
  const GatewayConfig c = TwoTenants();
  for (const char* auth :
       {"", "Bearer", "Bearer sk-a", "Basic sk-a1", "Bearer sk-rollout-admin2"}) {
    EXPECT_FALSE(ResolveDataScope(c, auth).has_value()) << auth;
  }
}

TEST(DataScopeTest, AGatewayWithoutKeysHasNoTenantsToKeepApart) {
  GatewayConfig c;
  EXPECT_TRUE(ResolveDataScope(c, "")->all);
  c.rollout.admin_key = "sk-rollout-admin";
  EXPECT_TRUE(ResolveDataScope(c, "")->all);
  EXPECT_TRUE(ResolveDataScope(c, "Bearer sk-rollout-admin")->all);
}

}  // namespace
}  // namespace brisk::gateway
