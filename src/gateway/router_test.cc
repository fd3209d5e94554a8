#include "gateway/router.h"

#include <gtest/gtest.h>

namespace brisk::gateway {
namespace {

GatewayConfig ThreeTiers() {
  auto c = ParseGatewayConfig(R"(
tiers:
  - {name: small, model: smol, upstreams: [http://h:1]}
  - {name: medium, model: gemma, upstreams: [http://h:2]}
  - {name: large, upstreams: [http://h:3]}
routing:
  default: medium
  features: {classify: small, reasoning: large, bulk: cascade}
  rules:
    - {route: large, min_prompt_chars: 1000}
    - {route: small, has_response_format: true}
    - {route: small, regex: "(?i)\\bextract\\b", features: ["", support]}
    - {route: cascade, has_tools: true}
  cascade: {tiers: [small, medium, large]}
)",
                              "g.yaml");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

TEST(Router, ExplicitModelWinsOverEverything) {
  GatewayConfig c = ThreeTiers();
  auto r = Router::Create(c);
  ASSERT_TRUE(r.ok());
  RequestFacts f;
  f.model = "small";
  f.feature = "reasoning";
  f.prompt_chars = 5000;
  auto plan = (*r)->Route(f);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->tiers, std::vector<int>({0}));
  EXPECT_EQ(plan->reason, "model");
  f.model = "gemma";  // a tier's model id
  EXPECT_EQ((*r)->Route(f)->tiers, std::vector<int>({1}));
}

TEST(Router, UnknownModelIsNotFoundAndListsChoices) {
  GatewayConfig c = ThreeTiers();
  auto r = Router::Create(c);
  RequestFacts f;
  f.model = "gpt-4o";
  auto plan = (*r)->Route(f);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kNotFound);
  EXPECT_NE(plan.status().message().find("auto, small, smol, medium, gemma, large"),
            std::string::npos)
      << plan.status().message();
}

TEST(Router, FeatureThenRulesThenDefault) {
  GatewayConfig c = ThreeTiers();
  auto r = Router::Create(c);
  RequestFacts f;
  f.model = "auto";
  f.feature = "classify";
  f.prompt_chars = 5000;
  EXPECT_EQ((*r)->Route(f)->tiers, std::vector<int>({0}));
  EXPECT_EQ((*r)->Route(f)->reason, "feature");
  f.feature = "unmapped";
  EXPECT_EQ((*r)->Route(f)->tiers, std::vector<int>({2}));  // rule 0: long prompt
  EXPECT_EQ((*r)->Route(f)->reason, "rule:0");
  f.prompt_chars = 10;
  f.has_response_format = true;
  EXPECT_EQ((*r)->Route(f)->reason, "rule:1");
  f.has_response_format = false;
  f.prompt_text = "Please EXTRACT the date";
  EXPECT_EQ((*r)->Route(f)->reason, "default");  // rule 2 needs feature "" or support
  f.feature = "support";
  EXPECT_EQ((*r)->Route(f)->reason, "rule:2");
  f.feature = "";
  EXPECT_EQ((*r)->Route(f)->reason, "rule:2");
  f.prompt_text = "extractor";  // \b: not a word on its own
  EXPECT_EQ((*r)->Route(f)->reason, "default");
  EXPECT_EQ((*r)->Route(f)->tiers, std::vector<int>({1}));
}

TEST(Router, CascadeListsTiersCheapestFirst) {
  GatewayConfig c = ThreeTiers();
  auto r = Router::Create(c);
  RequestFacts f;
  f.model = "auto";
  f.feature = "bulk";
  auto plan = (*r)->Route(f);
  EXPECT_TRUE(plan->cascade());
  EXPECT_EQ(plan->tiers, std::vector<int>({0, 1, 2}));
  f.feature = "";
  f.has_tools = true;
  EXPECT_EQ((*r)->Route(f)->tiers, std::vector<int>({0, 1, 2}));
  EXPECT_EQ((*r)->Route(f)->reason, "rule:3");
}

TEST(Router, ModelIdsStartWithAuto) {
  GatewayConfig c = ThreeTiers();
  auto r = Router::Create(c);
  EXPECT_EQ((*r)->ModelIds(),
            std::vector<std::string>({"auto", "small", "smol", "medium", "gemma", "large"}));
}

}  // namespace
}  // namespace brisk::gateway
