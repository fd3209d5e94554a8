#include "gateway/router.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

namespace brisk::gateway {

struct Router::CompiledRule {
  const RuleConfig* config = nullptr;
  pcre2_code* regex = nullptr;  // null when the rule has none
  ~CompiledRule() {
    if (regex != nullptr) pcre2_code_free(regex);
  }
};

Router::Router(const GatewayConfig& config) : config_(config) {}
Router::~Router() = default;

Expected<std::unique_ptr<Router>> Router::Create(const GatewayConfig& config) {
  std::unique_ptr<Router> router(new Router(config));
  for (size_t i = 0; i < config.routing.rules.size(); ++i) {
    auto rule = std::make_unique<CompiledRule>();
    rule->config = &config.routing.rules[i];
    if (!rule->config->regex.empty()) {
      int code = 0;
      PCRE2_SIZE offset = 0;
      rule->regex = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rule->config->regex.data()),
                                  rule->config->regex.size(), PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                                  &code, &offset, nullptr);
      if (rule->regex == nullptr) {
        return InvalidArgument("routing.rules[{}].regex does not compile (offset {})", i, offset);
      }
    }
    router->rules_.push_back(std::move(rule));
  }
  for (const std::string& t : config.routing.cascade.tiers) {
    router->cascade_.push_back(FindTier(config, t));
  }
  return router;
}

RoutePlan Router::Resolve(const std::string& route, std::string reason) const {
  RoutePlan plan;
  plan.reason = std::move(reason);
  if (route == "cascade") {
    plan.tiers = cascade_;
  } else {
    plan.tiers = {FindTier(config_, route)};
  }
  return plan;
}

bool Router::Matches(const CompiledRule& rule, const RequestFacts& f) const {
  const RuleConfig& c = *rule.config;
  if (c.min_prompt_chars >= 0 && f.prompt_chars < c.min_prompt_chars) return false;
  if (c.max_prompt_chars >= 0 && f.prompt_chars > c.max_prompt_chars) return false;
  if (c.has_tools >= 0 && f.has_tools != (c.has_tools == 1)) return false;
  if (c.has_response_format >= 0 && f.has_response_format != (c.has_response_format == 1)) {
    return false;
  }
  if (!c.features.empty() &&
      std::find(c.features.begin(), c.features.end(), f.feature) == c.features.end()) {
    return false;
  }
  if (rule.regex != nullptr) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(rule.regex, nullptr);
    int rc = pcre2_match(rule.regex, reinterpret_cast<PCRE2_SPTR>(f.prompt_text.data()),
                         f.prompt_text.size(), 0, 0, md, nullptr);
    pcre2_match_data_free(md);
    if (rc < 0) return false;
  }
  return true;
}

Expected<RoutePlan> Router::Route(const RequestFacts& f) const {
  if (f.model != kAutoModel) {
    for (size_t i = 0; i < config_.tiers.size(); ++i) {
      const TierConfig& t = config_.tiers[i];
      if (f.model == t.name || (!t.model.empty() && f.model == t.model)) {
        return RoutePlan{{static_cast<int>(i)}, "model"};
      }
    }
    std::string ids;
    for (const std::string& id : ModelIds()) ids += (ids.empty() ? "" : ", ") + id;
    return NotFound("The model '{}' does not exist here; models: {}", f.model, ids);
  }
  if (!f.feature.empty()) {
    auto it = config_.routing.features.find(std::string(f.feature));
    if (it != config_.routing.features.end()) return Resolve(it->second, "feature");
  }
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (Matches(*rules_[i], f)) return Resolve(rules_[i]->config->route, fmt::format("rule:{}", i));
  }
  if (!config_.routing.default_route.empty()) {
    return Resolve(config_.routing.default_route, "default");
  }
  return RoutePlan{{0}, "default"};
}

std::vector<std::string> Router::ModelIds() const {
  std::vector<std::string> ids = {std::string(kAutoModel)};
  for (const TierConfig& t : config_.tiers) {
    ids.push_back(t.name);
    if (!t.model.empty() && std::find(ids.begin(), ids.end(), t.model) == ids.end()) {
      ids.push_back(t.model);
    }
  }
  return ids;
}

}  // namespace brisk::gateway
