// `brisk rollout start|status|promote|abort|audit`: the gateway's admin API
// for rollouts (gateway/rollout_manager.h) from the command line.
//
//   brisk rollout start --gateway http://gw:8080 --tier small
//       --upstream http://10.0.0.7:8000 [--gate-report FILE | --gate-dir DIR]
//       [--shadow 0.2:30:10] [--canary 0.05:60,0.25:60,0.5:60] [--no-auto-promote]
//       [--threshold ttft_p95_ratio=1.5 ...]
//
// Without --gate-report the passing report is looked up the way `brisk
// serve` does: in --gate-dir (default: the gate directory of `brisk eval
// golden --save-gate`) under the serving key the candidate reports.
// The admin key comes from --admin-key or $BRISK_ADMIN_KEY.
#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/serving_gate.h"
#include "http/upstream_client.h"

namespace brisk {
namespace {

using Json = nlohmann::json;

struct RolloutFlags {
  std::string gateway = "http://127.0.0.1:8080";
  std::string admin_key;
  std::string tier;
  std::vector<std::string> upstreams;
  std::string upstream_type = "brisk";
  std::string model;
  std::string gate_report;
  std::string gate_dir;
  std::string shadow;  // share:duration_s:min_pairs
  std::string canary;  // share:duration_s,...
  bool no_auto_promote = false;
  std::vector<std::string> thresholds;
  bool json = false;
};

int Fail(const Status& s) { return FailCommand("brisk rollout", s, 1); }

Expected<std::pair<int, std::string>> Call(const std::string& base, const std::string& method,
                                           const std::string& path, const std::string& key,
                                           const std::string& body) {
  boost::asio::io_context io;
  http::UpstreamOptions options;
  options.base_url = base;
  options.head_timeout = std::chrono::seconds(30);
  ASSIGN_OR_RETURN(auto client, http::UpstreamClient::Create(io.get_executor(), options));
  http::UpstreamRequest req;
  req.method = method;
  req.path = path;
  req.body = body;
  if (!body.empty()) req.headers.push_back({"Content-Type", "application/json"});
  if (!key.empty()) req.headers.push_back({"Authorization", "Bearer " + key});
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') {
    req.headers.push_back({"X-Brisk-Operator", user});
  }
  return http::FetchBlocking(*client, io, std::move(req));
}

// The passing report for what `upstream` serves, from `dir`.
Expected<Json> FindGateReport(const std::string& upstream, const std::string& dir) {
  ASSIGN_OR_RETURN(auto models, Call(upstream, "GET", "/v1/models", "", ""));
  if (models.first != 200) {
    return InvalidArgument("{}: /v1/models answered HTTP {}", upstream, models.first);
  }
  Json j = Json::parse(models.second, nullptr, false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
      !j["data"][0].contains("brisk") || !j["data"][0]["brisk"].contains("serving_key")) {
    return InvalidArgument("{} reports no serving key (not a brisk serve?): pass --gate-report",
                           upstream);
  }
  ASSIGN_OR_RETURN(ServingKey key, ServingKey::FromJson(j["data"][0]["brisk"]["serving_key"]));
  ASSIGN_OR_RETURN(std::string path, FindPassingGateReport(dir, key));
  std::fprintf(stderr, "brisk rollout: gate report %s\n", path.c_str());
  return ReadJsonFile(path);
}

Expected<double> Number(const std::string& s, const std::string& what) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  return InvalidArgument("{}: '{}' is not a number", what, s);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

Expected<Json> StartBody(const RolloutFlags& f) {
  if (f.tier.empty()) return InvalidArgument("--tier is required");
  if (f.upstreams.empty()) return InvalidArgument("--upstream (the candidate) is required");
  Json body = {{"tier", f.tier}, {"upstreams", Json::array()}};
  for (const std::string& u : f.upstreams) {
    body["upstreams"].push_back({{"url", u}, {"type", f.upstream_type}});
  }
  if (!f.model.empty()) body["model"] = f.model;
  if (!f.gate_report.empty()) {
    ASSIGN_OR_RETURN(body["gate_report"], ReadJsonFile(f.gate_report));
  } else {
    ASSIGN_OR_RETURN(
        body["gate_report"],
        FindGateReport(f.upstreams[0], f.gate_dir.empty() ? DefaultGateDir() : f.gate_dir));
  }
  if (!f.shadow.empty()) {
    auto parts = Split(f.shadow, ':');
    if (parts.size() != 3) return InvalidArgument("--shadow: expected share:duration_s:min_pairs");
    ASSIGN_OR_RETURN(double share, Number(parts[0], "--shadow"));
    ASSIGN_OR_RETURN(double secs, Number(parts[1], "--shadow"));
    ASSIGN_OR_RETURN(double pairs, Number(parts[2], "--shadow"));
    body["shadow"] = {{"share", share}, {"duration_s", secs}, {"min_pairs", pairs}};
  }
  if (!f.canary.empty()) {
    Json steps = Json::array();
    for (const std::string& step : Split(f.canary, ',')) {
      auto parts = Split(step, ':');
      if (parts.size() != 2) return InvalidArgument("--canary: expected share:duration_s,...");
      ASSIGN_OR_RETURN(double share, Number(parts[0], "--canary"));
      ASSIGN_OR_RETURN(double secs, Number(parts[1], "--canary"));
      steps.push_back({{"share", share}, {"duration_s", secs}});
    }
    body["canary"] = steps;
  }
  if (f.no_auto_promote) body["auto_promote"] = false;
  for (const std::string& t : f.thresholds) {
    const size_t eq = t.find('=');
    if (eq == std::string::npos) return InvalidArgument("--threshold: expected name=value");
    ASSIGN_OR_RETURN(double v, Number(t.substr(eq + 1), "--threshold " + t.substr(0, eq)));
    body["thresholds"][t.substr(0, eq)] = v;
  }
  return body;
}

void PrintStatus(const Json& r) {
  std::printf("%s  tier %s  stage %s", r.value("id", "").c_str(), r.value("tier", "").c_str(),
              r.value("stage", "").c_str());
  if (r.contains("step")) std::printf(" step %d", r["step"].get<int>());
  std::printf("  candidate %.0f%%  shadow %.0f%%  %.0f s in stage\n",
              100 * r.value("candidate_share", 0.0), 100 * r.value("shadow_share", 0.0),
              r.value("seconds_in_stage", 0.0));
  for (const char* arm : {"baseline", "candidate"}) {
    const Json& a = r[arm];
    std::printf(
        "  %-9s %5lld req  TTFT p95 %8.1f ms  TPOT p95 %6.2f ms  errors %.3f  429 %.3f  "
        "structured failures %.3f\n",
        arm, static_cast<long long>(a.value("requests", 0)), a.value("ttft_p95_ms", -1.0),
        a.value("tpot_p95_ms", -1.0), a.value("error_rate", 0.0), a.value("rate_429", 0.0),
        a.value("structured_failure_rate", 0.0));
  }
  const Json& j = r["judge"];
  std::printf(
      "  judge     %5lld pairs  score %.3f  95%% [%.3f, %.3f]  position-inconsistent %lld\n",
      static_cast<long long>(j.value("pairs", 0)), j.value("score_mean", 0.0),
      j.value("score_lower95", 0.0), j.value("score_upper95", 1.0),
      static_cast<long long>(j.value("position_inconsistent", 0)));
}

int Run(const std::string& verb, RolloutFlags f) {
  if (f.admin_key.empty()) {
    if (const char* k = std::getenv("BRISK_ADMIN_KEY")) f.admin_key = k;
  }
  std::string method = "GET", path = "/admin/rollouts", body;
  if (verb == "start") {
    auto b = StartBody(f);
    if (!b.ok()) return Fail(b.status());
    method = "POST";
    body = b->dump();
  } else if (verb == "promote" || verb == "abort") {
    if (f.tier.empty()) return Fail(InvalidArgument("--tier is required"));
    method = "POST";
    path += "/" + verb;
    body = Json{{"tier", f.tier}}.dump();
  } else if (verb == "audit") {
    path = "/admin/audit";
  }
  auto r = Call(f.gateway, method, path, f.admin_key, body);
  if (!r.ok()) return Fail(r.status().WithContext(f.gateway));
  Json j = Json::parse(r->second, nullptr, false);
  if (r->first >= 300 || j.is_discarded()) {
    std::string msg = r->second;
    if (j.is_object() && j.contains("error")) msg = j["error"].value("message", msg);
    return Fail(InvalidArgument("HTTP {}: {}", r->first, msg));
  }
  if (f.json || verb == "audit") {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (j.contains("data")) {
    if (j["data"].empty()) std::printf("no rollouts\n");
    for (const Json& x : j["data"]) PrintStatus(x);
  } else {
    PrintStatus(j);
  }
  return 0;
}

}  // namespace

CommandRunner RegisterRollout(CLI::App& app) {
  auto f = std::make_shared<RolloutFlags>();
  app.require_subcommand(1);
  auto common = [f](CLI::App* sub) {
    sub->add_option("--gateway", f->gateway, "the gateway's URL")->capture_default_str();
    sub->add_option("--admin-key", f->admin_key,
                    "the gateway's rollout.admin_key (default: $BRISK_ADMIN_KEY)");
    sub->add_flag("--json", f->json, "print the API's JSON");
  };
  CLI::App* start = app.add_subcommand("start", "Start a rollout (the gate is checked first)");
  common(start);
  start->add_option("--tier", f->tier, "the tier to roll out to")->required();
  start->add_option("--upstream", f->upstreams, "a candidate replica's URL (repeat)")->required();
  start->add_option("--upstream-type", f->upstream_type, "brisk or openai")
      ->check(CLI::IsMember({"brisk", "openai"}))
      ->capture_default_str();
  start->add_option("--model", f->model, "the candidate's model id (default: its /v1/models)");
  start->add_option("--gate-report", f->gate_report,
                    "the candidate's passing `brisk eval golden --save-gate` report");
  start->add_option("--gate-dir", f->gate_dir,
                    "where to look the report up by the candidate's serving key (default: "
                    "$BRISK_GATE_DIR or ~/.cache/brisk/gates)");
  start->add_option("--shadow", f->shadow,
                    "share:duration_s:min_pairs of the shadow stage (0:0:0 skips it)");
  start->add_option("--canary", f->canary, "canary steps, share:duration_s,... (rising shares)");
  start->add_flag("--no-auto-promote", f->no_auto_promote,
                  "stay at the last canary step until `brisk rollout promote`");
  start->add_option(
      "--threshold", f->thresholds,
      "name=value (ttft_p95_ratio, error_rate, min_judge_score, ...; docs/gateway.md)");
  CLI::App* status = app.add_subcommand("status", "Every rollout's stage and live windows");
  common(status);
  CLI::App* promote = app.add_subcommand("promote", "Move a tier's rollout to its next stage now");
  common(promote);
  promote->add_option("--tier", f->tier, "the tier")->required();
  CLI::App* abort = app.add_subcommand("abort", "Send all of a tier's traffic to the baseline");
  common(abort);
  abort->add_option("--tier", f->tier, "the tier")->required();
  CLI::App* audit = app.add_subcommand("audit", "The audit log's recent decisions (JSON)");
  common(audit);
  return [f, &app]() -> int {
    for (const char* verb : {"start", "status", "promote", "abort", "audit"}) {
      if (app.got_subcommand(verb)) return Run(verb, *f);
    }
    return 2;
  };
}

}  // namespace brisk
