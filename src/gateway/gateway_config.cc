#include "gateway/gateway_config.h"

#include <fmt/format.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "config/config_yaml.h"
#include "util/log.h"

namespace brisk::gateway {

namespace {

using config_yaml::Describe;
using config_yaml::Field;
using config_yaml::LineOf;
using config_yaml::Loc;
using config_yaml::Reader;
using config_yaml::Section;

constexpr std::string_view kCascade = "cascade";
constexpr std::string_view kPolicies[] = {"least_loaded", "round_robin"};
constexpr std::string_view kUpstreamTypes[] = {"brisk", "openai"};
constexpr double kDay = 86400;

// A price or budget in dollars: a finite number >= 0.
config_yaml::Handler Dollars(const Reader& r, double* dst) {
  return [&r, dst](const YAML::Node& v, const Loc& at) -> Status {
    double x = 0;
    if (!v.IsScalar() || !config_yaml::ParseFiniteDouble(config_yaml::Trim(v.Scalar()), &x) ||
        x < 0) {
      return r.Error(at.line, "{}: expected a number of dollars >= 0, got {}", at.path,
                     Describe(v));
    }
    *dst = x;
    return Status::Ok();
  };
}

config_yaml::Handler AnyDouble(const Reader& r, double* dst, double min, double max) {
  return [&r, dst, min, max](const YAML::Node& v, const Loc& at) -> Status {
    double x = 0;
    if (!v.IsScalar() || !config_yaml::ParseFiniteDouble(config_yaml::Trim(v.Scalar()), &x) ||
        x < min || x > max) {
      return r.Error(at.line, "{}: expected a number in [{}, {}], got {}", at.path, min, max,
                     Describe(v));
    }
    *dst = x;
    return Status::Ok();
  };
}

config_yaml::Handler StringList(const Reader& r, std::vector<std::string>* dst) {
  return [&r, dst](const YAML::Node& v, const Loc& at) -> Status {
    if (v.IsNull()) return Status::Ok();
    if (!v.IsSequence()) {
      return r.Error(at.line, "{}: expected a list of names, got {}", at.path, Describe(v));
    }
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].IsScalar()) {
        return r.Error(LineOf(v[i], at.line), "{}[{}]: expected a name, got {}", at.path, i,
                       Describe(v[i]));
      }
      dst->push_back(v[i].Scalar());
    }
    return Status::Ok();
  };
}

// -1 unset, 0 false, 1 true.
config_yaml::Handler TriState(const Reader& r, int* dst) {
  return [&r, dst](const YAML::Node& v, const Loc& at) -> Status {
    bool b = false;
    RETURN_IF_ERROR(r.Bool(&b)(v, at));
    *dst = b ? 1 : 0;
    return Status::Ok();
  };
}

// Reads a sequence of maps, one `read` per entry.
template <typename T, typename MakeFields>
Status ReadList(Reader& r, const YAML::Node& n, const Loc& at, std::string_view what,
                std::vector<T>* out, MakeFields make_fields) {
  if (n.IsNull()) return Status::Ok();
  if (!n.IsSequence()) {
    return r.Error(at.line, "{}: expected a list of {}, got {}", at.path, what, Describe(n));
  }
  for (size_t i = 0; i < n.size(); ++i) {
    Loc entry{fmt::format("{}[{}]", at.path, i), LineOf(n[i], at.line)};
    T item;
    std::vector<Field> fields = make_fields(r, item);
    if (!n[i].IsMap()) {
      return r.Error(entry.line, "{}: expected a map ({}), got {}", entry.path, what,
                     Describe(n[i]));
    }
    RETURN_IF_ERROR(r.ReadMap(n[i], entry, fields, {}));
    out->push_back(std::move(item));
  }
  return Status::Ok();
}

std::vector<Field> UpstreamFields(const Reader& r, UpstreamConfig& u, std::string* key_env) {
  return {
      {"url", r.String(&u.url, false)},
      {"type", r.OneOf(&u.type, kUpstreamTypes)},
      {"api_key", r.String(&u.api_key, false)},
      {"api_key_env", r.String(key_env, false)},
      {"kv_events", r.String(&u.kv_events, false)},
      {"kv_events_replay", r.String(&u.kv_events_replay, false)},
      {"kv_events_topic", r.String(&u.kv_events_topic, true)},
  };
}

Status ReadUpstreams(Reader& r, const YAML::Node& n, const Loc& at,
                     std::vector<UpstreamConfig>* out) {
  if (n.IsNull() || (n.IsSequence() && n.size() == 0)) {
    return r.Error(at.line, "{}: a tier needs at least one upstream", at.path);
  }
  if (!n.IsSequence()) {
    return r.Error(at.line, "{}: expected a list of {{url, type}} maps, got {}", at.path,
                   Describe(n));
  }
  for (size_t i = 0; i < n.size(); ++i) {
    Loc entry{fmt::format("{}[{}]", at.path, i), LineOf(n[i], at.line)};
    UpstreamConfig u;
    std::string key_env;
    if (n[i].IsScalar()) {  // "- http://host:port" shorthand
      u.url = n[i].Scalar();
    } else if (n[i].IsMap()) {
      RETURN_IF_ERROR(r.ReadMap(n[i], entry, UpstreamFields(r, u, &key_env), {}));
    } else {
      return r.Error(entry.line, "{}: expected a URL or a map {{url, type, api_key}}, got {}",
                     entry.path, Describe(n[i]));
    }
    if (!u.url.starts_with("http://")) {
      return r.Error(entry.line, "{}.url: expected http://host:port, got '{}'", entry.path, u.url);
    }
    if (!key_env.empty()) {
      if (!u.api_key.empty()) {
        return r.Error(entry.line, "{}: set only one of 'api_key' and 'api_key_env'", entry.path);
      }
      const char* value = std::getenv(key_env.c_str());
      if (value == nullptr || *value == '\0') {
        return r.Error(entry.line, "{}.api_key_env: environment variable '{}' is not set",
                       entry.path, key_env);
      }
      u.api_key = value;
    }
    for (const std::string* ep : {&u.kv_events, &u.kv_events_replay}) {
      if (!ep->empty() && !ep->starts_with("tcp://") && !ep->starts_with("ipc://")) {
        return r.Error(entry.line, "{}.{}: expected tcp://host:port or ipc://path, got '{}'",
                       entry.path, ep == &u.kv_events ? "kv_events" : "kv_events_replay", *ep);
      }
    }
    if (u.kv_events.empty() && !u.kv_events_replay.empty()) {
      return r.Error(entry.line, "{}: kv_events_replay needs kv_events (the event stream)",
                     entry.path);
    }
    if (!u.kv_events.empty() && u.type != "brisk") {
      return r.Error(entry.line,
                     "{}: kv_events needs a brisk upstream (the gateway asks it for the "
                     "prompt's block hashes)",
                     entry.path);
    }
    for (const UpstreamConfig& prev : *out) {
      if (prev.url == u.url) {
        return r.Error(entry.line, "{}: upstream '{}' is listed twice in this tier", entry.path,
                       u.url);
      }
    }
    out->push_back(std::move(u));
  }
  return Status::Ok();
}

std::vector<Section> BuildSchema(const Reader& r, GatewayConfig& c) {
  GatewayConfig::Server& s = c.server;
  GatewayConfig::Replicas& p = c.replicas;
  InferenceConfig::Logging& g = c.logging;
  return {
      {"server", ListenerFields(r, s)},
      {"replicas",
       {
           {"policy", r.OneOf(&p.policy, kPolicies)},
           {"prefix_affinity", r.Bool(&p.prefix_affinity)},
           {"affinity_prefix_bytes", r.Int(&p.affinity_prefix_bytes, 16, 1 << 20)},
           {"load_factor", AnyDouble(r, &p.load_factor, 1, 100)},
           {"health_interval_s", r.Seconds(&p.health_interval_s, true, 3600)},
           {"eject_after_failures", r.Int(&p.eject_after_failures, 1, 1000)},
           {"eject_s", r.Seconds(&p.eject_s, true, kDay)},
           {"max_attempts", r.Int(&p.max_attempts, 1, 16)},
           {"connect_timeout_s", r.Seconds(&p.connect_timeout_s, true, 600)},
           {"prefix_routing", r.Bool(&p.prefix_routing)},
           {"prefix_index_blocks", r.Int(&p.prefix_index_blocks, 1, int64_t{1} << 32)},
           {"queued_request_tokens", r.Int(&p.queued_request_tokens, 0, int64_t{1} << 30)},
           {"block_hashes_timeout_s", r.Seconds(&p.block_hashes_timeout_s, true, 60)},
       }},
      {"ledger",
       {{"url", r.String(&c.ledger.url, false)},
        {"url_env", r.String(&c.ledger.url_env, false)},
        {"gateways", r.Int(&c.ledger.gateways, 1, 10000)},
        {"spool_path", r.String(&c.ledger.spool_path, true)}}},
      {"responses",
       {
           {"max_entries", r.Int(&c.responses.max_entries, 1, int64_t{1} << 30)},
           {"max_bytes", r.Bytes(&c.responses.max_bytes, int64_t{1} << 40)},
           {"ttl_s", r.Seconds(&c.responses.ttl_s, true, 365 * kDay)},
       }},
      {"rollout",
       {
           {"admin_key", r.String(&c.rollout.admin_key, false)},
           {"admin_key_env", r.String(&c.rollout.admin_key_env, false)},
           {"audit_log", r.String(&c.rollout.audit_log, false)},
           {"judge_tier", r.String(&c.rollout.judge_tier, false)},
           {"tick_s", r.Seconds(&c.rollout.tick_s, true, 60)},
       }},
      {"logging",
       {
           {"level", r.OneOf(&g.level, log::LevelNames())},
           {"format", r.OneOf(&g.format, log::FormatNames())},
           {"access_log", r.Bool(&g.access_log)},
           {"access_log_path", r.String(&g.access_log_path, false)},
           {"otlp_endpoint", r.String(&g.otlp_endpoint, true)},
       }},
  };
}

Status ReadTiers(Reader& r, const YAML::Node& n, const Loc& at, std::vector<TierConfig>* out) {
  return ReadList(r, n, at, "tiers {name, model, prices, upstreams}", out,
                  [](Reader& er, TierConfig& t) -> std::vector<Field> {
                    return {
                        {"name", er.String(&t.name, false)},
                        {"model", er.String(&t.model, true)},
                        {"prices",
                         [&er, &t](const YAML::Node& v, const Loc& at) {
                           return er.ReadMap(
                               v, at,
                               {{"input", Dollars(er, &t.prices.input_per_mtok)},
                                {"cached_input", Dollars(er, &t.prices.cached_input_per_mtok)},
                                {"output", Dollars(er, &t.prices.output_per_mtok)}},
                               {});
                         }},
                        {"upstreams",
                         [&er, &t](const YAML::Node& v, const Loc& at) {
                           return ReadUpstreams(er, v, at, &t.upstreams);
                         }},
                    };
                  });
}

Status ReadRouting(Reader& r, const YAML::Node& n, const Loc& at, GatewayConfig::Routing* out) {
  std::vector<Field> fields = {
      {"default", r.String(&out->default_route, false)},
      {"features",
       [&r, out](const YAML::Node& v, const Loc& at) -> Status {
         if (v.IsNull()) return Status::Ok();
         if (!v.IsMap()) {
           return r.Error(at.line, "{}: expected a map feature: tier, got {}", at.path,
                          Describe(v));
         }
         for (const auto& e : v) {
           const YAML::Node k = e.first, val = e.second;
           if (!k.IsScalar() || !val.IsScalar() || val.Scalar().empty()) {
             return r.Error(LineOf(k, at.line), "{}: expected feature: tier (or cascade)", at.path);
           }
           out->features[k.Scalar()] = val.Scalar();
         }
         return Status::Ok();
       }},
      {"rules",
       [&r, out](const YAML::Node& v, const Loc& at) {
         return ReadList(r, v, at, "rules {route, when conditions}", &out->rules,
                         [](Reader& er, RuleConfig& rule) -> std::vector<Field> {
                           return {
                               {"route", er.String(&rule.route, false)},
                               {"min_prompt_chars", er.Int(&rule.min_prompt_chars, 0, INT64_MAX)},
                               {"max_prompt_chars", er.Int(&rule.max_prompt_chars, 0, INT64_MAX)},
                               {"has_tools", TriState(er, &rule.has_tools)},
                               {"has_response_format", TriState(er, &rule.has_response_format)},
                               {"regex", er.String(&rule.regex, false)},
                               {"features", StringList(er, &rule.features)},
                           };
                         });
       }},
      {"cascade",
       [&r, out](const YAML::Node& v, const Loc& at) {
         CascadeConfig& c = out->cascade;
         return r.ReadMap(v, at,
                          {{"tiers", StringList(r, &c.tiers)},
                           {"min_mean_logprob", AnyDouble(r, &c.min_mean_logprob, -100, 0)},
                           {"escalate_on_invalid_json", r.Bool(&c.escalate_on_invalid_json)}},
                          {});
       }},
  };
  return r.ReadMap(n, at, fields, {});
}

Status ReadBudgetLimits(Reader& r, const YAML::Node& n, const Loc& at,
                        std::vector<BudgetConfig>* out) {
  return ReadList(r, n, at, "budgets {key or feature, daily_usd, monthly_usd}", out,
                  [](Reader& er, BudgetConfig& b) -> std::vector<Field> {
                    return {
                        {"key", er.String(&b.key, false)},
                        {"feature", er.String(&b.feature, false)},
                        {"daily_usd", Dollars(er, &b.daily_usd)},
                        {"monthly_usd", Dollars(er, &b.monthly_usd)},
                    };
                  });
}

constexpr std::string_view kOutagePolicies[] = {"allow", "refuse"};

// `budgets:` is the list of limits, or a map of the limits and the policy.
Status ReadBudgets(Reader& r, const YAML::Node& n, const Loc& at, GatewayConfig* c) {
  if (!n.IsMap()) return ReadBudgetLimits(r, n, at, &c->budgets);
  return r.ReadMap(
      n, at,
      {{"limits", [&r, c](const YAML::Node& v,
                          const Loc& at) { return ReadBudgetLimits(r, v, at, &c->budgets); }},
       {"on_store_outage", r.OneOf(&c->budget_policy.on_store_outage, kOutagePolicies)},
       {"reservation_ttl_s", r.Seconds(&c->budget_policy.reservation_ttl_s, true, kDay)}},
      {});
}

bool ValidRegex(const std::string& pattern, std::string* why) {
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                 PCRE2_UTF, &code, &offset, nullptr);
  if (re != nullptr) {
    pcre2_code_free(re);
    return true;
  }
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof(buf));
  *why = fmt::format("{} at offset {}", reinterpret_cast<const char*>(buf), offset);
  return false;
}

// Checks across sections: names that must refer to tiers, duplicates.
Status CheckConsistency(const Reader& r, const GatewayConfig& c) {
  if (c.tiers.empty()) {
    return r.Error(1, "tiers: at least one tier with upstreams is needed");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < c.tiers.size(); ++i) {
    const TierConfig& t = c.tiers[i];
    int line = r.LineOfKey(fmt::format("tiers[{}].name", i));
    if (t.name.empty()) return r.Error(line, "tiers[{}]: missing 'name'", i);
    if (t.name == kCascade) {
      return r.Error(line, "tiers[{}]: 'cascade' is reserved for routing, name the tier else", i);
    }
    if (!names.insert(t.name).second) {
      return r.Error(line, "tiers[{}]: tier '{}' is defined twice", i, t.name);
    }
    if (t.upstreams.empty()) {
      return r.Error(line, "tiers[{}] ({}): a tier needs at least one upstream", i, t.name);
    }
  }
  const bool has_cascade = !c.routing.cascade.tiers.empty();
  auto check_route = [&](const std::string& route, std::string_view where, int line) -> Status {
    if (route == kCascade) {
      if (!has_cascade) {
        return r.Error(line, "{}: routes to 'cascade' but routing.cascade.tiers is empty", where);
      }
      return Status::Ok();
    }
    if (!names.contains(route)) {
      return r.Error(line, "{}: unknown tier '{}' (tiers: {})", where, route,
                     fmt::join(names, ", "));
    }
    return Status::Ok();
  };
  if (!c.routing.default_route.empty()) {
    RETURN_IF_ERROR(
        check_route(c.routing.default_route, "routing.default", r.LineOfKey("routing.default")));
  }
  for (const auto& [feature, route] : c.routing.features) {
    RETURN_IF_ERROR(check_route(route, fmt::format("routing.features.{}", feature),
                                r.LineOfKey("routing.features")));
  }
  for (size_t i = 0; i < c.routing.rules.size(); ++i) {
    const RuleConfig& rule = c.routing.rules[i];
    std::string where = fmt::format("routing.rules[{}]", i);
    int line = std::max(r.LineOfKey(where + ".route"), r.LineOfKey("routing.rules"));
    if (rule.route.empty()) return r.Error(line, "{}: missing 'route' (a tier or cascade)", where);
    RETURN_IF_ERROR(check_route(rule.route, where, line));
    std::string why;
    if (!rule.regex.empty() && !ValidRegex(rule.regex, &why)) {
      return r.Error(line, "{}.regex: not a valid regular expression: {}", where, why);
    }
  }
  std::set<std::string> in_cascade;
  for (const std::string& t : c.routing.cascade.tiers) {
    int line = r.LineOfKey("routing.cascade.tiers");
    if (!names.contains(t)) {
      return r.Error(line, "routing.cascade.tiers: unknown tier '{}'", t);
    }
    if (!in_cascade.insert(t).second) {
      return r.Error(line, "routing.cascade.tiers: tier '{}' is listed twice", t);
    }
  }
  if (has_cascade && c.routing.cascade.tiers.size() < 2) {
    return r.Error(r.LineOfKey("routing.cascade.tiers"),
                   "routing.cascade.tiers: a cascade needs at least two tiers");
  }
  if (!c.rollout.judge_tier.empty() && !names.contains(c.rollout.judge_tier)) {
    return r.Error(r.LineOfKey("rollout.judge_tier"), "rollout.judge_tier: unknown tier '{}'",
                   c.rollout.judge_tier);
  }
  for (const ApiKeyConfig& k : c.keys) {
    if (!c.rollout.admin_key.empty() && k.key == c.rollout.admin_key) {
      return r.Error(r.LineOfKey("rollout"),
                     "rollout.admin_key: the admin key must not also be a caller's key ({})",
                     k.name);
    }
  }
  for (size_t i = 0; i < c.budgets.size(); ++i) {
    const BudgetConfig& b = c.budgets[i];
    int line = r.LineOfKey("budgets");
    if (b.key.empty() == b.feature.empty()) {
      return r.Error(line,
                     "budgets[{}]: set exactly one of 'key' (an API key's name) and "
                     "'feature'",
                     i);
    }
    if (b.daily_usd == 0 && b.monthly_usd == 0) {
      return r.Error(line, "budgets[{}]: set daily_usd or monthly_usd (or both)", i);
    }
    if (!b.key.empty() && std::none_of(c.keys.begin(), c.keys.end(),
                                       [&](const ApiKeyConfig& k) { return k.name == b.key; })) {
      return r.Error(line, "budgets[{}]: no API key is named '{}'", i, b.key);
    }
  }
  return Status::Ok();
}

Expected<GatewayConfig> ParseDocument(const YAML::Node& doc, std::string_view filename) {
  GatewayConfig c;
  Reader r(filename);
  std::vector<Section> sections = BuildSchema(r, c);
  std::vector<Field> top = r.SectionFields(sections);
  top.push_back({"tiers", [&r, &c](const YAML::Node& v, const Loc& at) {
                   return ReadTiers(r, v, at, &c.tiers);
                 }});
  top.push_back({"routing", [&r, &c](const YAML::Node& v, const Loc& at) {
                   return ReadRouting(r, v, at, &c.routing);
                 }});
  top.push_back({"budgets", [&r, &c](const YAML::Node& v, const Loc& at) {
                   return ReadBudgets(r, v, at, &c);
                 }});
  top.push_back({"keys", [&r, &c](const YAML::Node& v, const Loc& at) {
                   return config_yaml::ReadApiKeys(r, v, at, &c.keys);
                 }});
  RETURN_IF_ERROR(r.ReadMap(doc, Loc{"", LineOf(doc, 1)}, top, sections));
  if (const std::string& env = c.rollout.admin_key_env; !env.empty()) {
    const int line = r.LineOfKey("rollout.admin_key_env");
    if (!c.rollout.admin_key.empty()) {
      return r.Error(line, "rollout: set only one of 'admin_key' and 'admin_key_env'");
    }
    const char* value = std::getenv(env.c_str());
    if (value == nullptr || *value == '\0') {
      return r.Error(line, "rollout.admin_key_env: environment variable '{}' is not set", env);
    }
    c.rollout.admin_key = value;
  }
  if (const std::string& env = c.ledger.url_env; !env.empty()) {
    const int line = r.LineOfKey("ledger.url_env");
    const char* value = std::getenv(env.c_str());
    if (value == nullptr || *value == '\0') {
      return r.Error(line, "ledger.url_env: environment variable '{}' is not set", env);
    }
    c.ledger.url = value;
  }
  RETURN_IF_ERROR(CheckConsistency(r, c));
  return c;
}

}  // namespace

Expected<GatewayConfig> ParseGatewayConfig(std::string_view yaml_text, std::string_view filename) {
  GatewayConfig c;
  RETURN_IF_ERROR(
      config_yaml::WithYamlDocument(yaml_text, filename, [&](const YAML::Node& doc) -> Status {
        if (doc.IsNull()) {
          return InvalidArgument("{}: the file is empty; a gateway needs at least one tier",
                                 filename);
        }
        ASSIGN_OR_RETURN(c, ParseDocument(doc, filename));
        return Status::Ok();
      }));
  return c;
}

Expected<GatewayConfig> LoadGatewayConfig(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, config_yaml::ReadConfigFile(path));
  return ParseGatewayConfig(text, path);
}

int FindTier(const GatewayConfig& config, std::string_view name) {
  for (size_t i = 0; i < config.tiers.size(); ++i) {
    if (config.tiers[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace brisk::gateway
