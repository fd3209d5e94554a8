// Which tier (or cascade of tiers) answers a request. Pure logic over the
// parsed gateway.yaml and a few facts of the request; no I/O.
//
// Order: 1. an explicit model: a tier's name or its model id;
// 2. the caller's feature (from its API key or X-Feature) mapped to a tier;
// 3. the first rule whose conditions all hold (prompt size, tools or
// response_format present, a regex over the prompt, features); 4. the default
// route. Steps 2-4 run only for model "auto". A route may be "cascade": try
// the cascade's tiers cheapest first (escalation is the gateway's job, this
// only lists them).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/gateway_config.h"
#include "util/status.h"

namespace brisk::gateway {

// The model id that asks the gateway to choose.
inline constexpr std::string_view kAutoModel = "auto";

struct RequestFacts {
  std::string_view model;    // as the client sent it
  std::string_view feature;  // "" when none
  int64_t prompt_chars = 0;  // bytes of the prompt text (message contents joined)
  bool has_tools = false;
  bool has_response_format = false;  // json_object or json_schema
  std::string_view prompt_text;      // what rule regexes search
};

struct RoutePlan {
  std::vector<int> tiers;  // tier indices in the config; more than one = a cascade, in order
  std::string reason;      // "model" | "feature" | "rule:<i>" | "default"
  bool cascade() const { return tiers.size() > 1; }
};

class Router {
 public:
  // Compiles the rules' regexes (the config loader checked them already).
  static Expected<std::unique_ptr<Router>> Create(const GatewayConfig& config);
  ~Router();

  // NotFound (OpenAI's model_not_found) for a model that is neither "auto",
  // a tier name nor a tier's model id.
  Expected<RoutePlan> Route(const RequestFacts& facts) const;

  // Model ids /v1/models lists: "auto", then each tier's name and model id.
  std::vector<std::string> ModelIds() const;

 private:
  struct CompiledRule;
  explicit Router(const GatewayConfig& config);
  RoutePlan Resolve(const std::string& route, std::string reason) const;
  bool Matches(const CompiledRule& rule, const RequestFacts& facts) const;

  const GatewayConfig& config_;
  std::vector<std::unique_ptr<CompiledRule>> rules_;
  std::vector<int> cascade_;
};

}  // namespace brisk::gateway
