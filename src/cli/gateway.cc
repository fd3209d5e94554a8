// `brisk gateway --config gateway.yaml`: the gateway in front of tiers of
// engines (src/gateway/). Prints "brisk gateway: listening on http://H:P" once
// it accepts connections; SIGINT/SIGTERM drain and stop as every server does
// (cli/serve_until_signal.h): in-flight requests finish and their ledger rows
// are committed; a second signal cuts the drain short.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/serve_until_signal.h"
#include "gateway/calibrate.h"
#include "gateway/canned_upstream.h"
#include "gateway/gateway_server.h"
#include "http/openai_answer.h"
#include "util/log.h"

namespace brisk {

namespace {

struct CalibrateFlags {
  std::string golden;
  double target_share = 0.3;
};

struct GatewayFlags {
  CalibrateFlags calibrate;
  std::string config;
  std::string host;
  int port = -1;
  std::string ledger;
  std::string log_level;
  double drain_grace_s = 30;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "brisk gateway: %s\n", s.message().c_str());
  return 1;
}

int RunGateway(const GatewayFlags& f) {
  const sigset_t sigs = BlockShutdownSignals();

  auto cfg = gateway::LoadGatewayConfig(f.config);
  if (!cfg.ok()) return Fail(cfg.status());
  if (!f.log_level.empty()) cfg->logging.level = f.log_level;
  auto level = log::ParseLevel(cfg->logging.level);
  auto format = log::ParseFormat(cfg->logging.format);
  log::Init(level.ok() ? *level : log::Level::kInfo, format.ok() ? *format : log::Format::kText);
  if (!f.host.empty()) cfg->server.host = f.host;
  if (f.port >= 0) cfg->server.port = f.port;
  if (!f.ledger.empty()) cfg->ledger.url = f.ledger;

  // A PostgreSQL ledger may go away: its rows wait in the local spool meanwhile.
  const bool remote = cfg->ledger.url.starts_with("postgres");
  auto ledger = gateway::OpenLedger(cfg->ledger.url, gateway::LedgerMode::kReadWrite,
                                    remote ? cfg->ledger.spool_path : "");
  if (!ledger.ok()) return Fail(ledger.status().WithContext("ledger"));
  const std::string host = cfg->server.host;
  const size_t tiers = cfg->tiers.size();
  auto server = gateway::GatewayServer::Start(std::move(*cfg), std::move(*ledger));
  if (!server.ok()) return Fail(server.status());
  std::printf("brisk gateway: listening on http://%s:%d (%zu tiers)\n", host.c_str(),
              (*server)->port(), tiers);
  std::fflush(stdout);

  gateway::GatewayServer& gw = **server;
  const int code = ServeUntilSignal(sigs, {.begin_drain = [&gw] { gw.BeginDrain(); },
                                           .in_flight = [&gw] { return gw.active_requests(); },
                                           .stop = [&gw] { gw.Stop(); },
                                           .drain_grace_s = f.drain_grace_s,
                                           .name = "brisk gateway"});
  std::_Exit(code);
}

int RunCannedUpstream(const gateway::CannedUpstreamOptions& o) {
  const sigset_t sigs = BlockShutdownSignals();
  auto server = gateway::StartCannedUpstream(o);
  if (!server.ok()) return Fail(server.status());
  std::printf("brisk canned-upstream: listening on http://%s:%d\n", o.host.c_str(),
              (*server)->port());
  std::fflush(stdout);
  http::Server& canned = **server;
  ServingLifecycle lifecycle;  // nothing to drain: a canned answer is immediate
  lifecycle.stop = [&canned] { canned.Stop(); };
  lifecycle.drain_grace_s = 0;
  lifecycle.name = "brisk canned-upstream";
  return ServeUntilSignal(sigs, lifecycle);
}

// `brisk gateway calibrate`: the cascade's first tier answers the golden set;
// prints the min_mean_logprob that escalates the target share.
int RunCalibrate(const GatewayFlags& f) {
  auto cfg = gateway::LoadGatewayConfig(f.config);
  if (!cfg.ok()) return Fail(cfg.status());
  if (cfg->routing.cascade.tiers.empty()) {
    return Fail(
        InvalidArgument("{}: routing.cascade.tiers is empty: nothing to calibrate", f.config));
  }
  const gateway::TierConfig& first =
      cfg->tiers[gateway::FindTier(*cfg, cfg->routing.cascade.tiers[0])];
  const gateway::UpstreamConfig& up = first.upstreams[0];
  std::string model = first.model;
  if (model.empty()) {
    auto id = http::DiscoverModel(up.url, up.api_key);
    if (!id.ok()) return Fail(id.status());
    model = *id;
  }
  auto cases = gateway::ReadCalibrationSet(f.calibrate.golden, model);
  if (!cases.ok()) return Fail(cases.status());
  std::fprintf(stderr, "calibrating on %zu cases against tier %s (%s)...\n", cases->size(),
               first.name.c_str(), up.url.c_str());
  auto r = gateway::Calibrate(up.url, up.api_key, *cases, f.calibrate.target_share);
  if (!r.ok()) return Fail(r.status());
  std::vector<double> sorted;
  for (double m : r->mean_logprobs) {
    if (m == m) sorted.push_back(m);
  }
  std::sort(sorted.begin(), sorted.end());
  auto q = [&](double p) { return sorted[static_cast<size_t>(p * (sorted.size() - 1))]; };
  std::printf(
      "mean token logprob over %d answered cases: min %.3f  p25 %.3f  p50 %.3f  "
      "p75 %.3f  max %.3f\n",
      r->answered, sorted.front(), q(0.25), q(0.5), q(0.75), sorted.back());
  std::printf("target escalation share %.0f%%: %d of %d cases fall below the threshold\n",
              f.calibrate.target_share * 100, r->escalated, r->answered);
  std::printf("routing:\n  cascade:\n    min_mean_logprob: %.4f\n", r->threshold);
  return 0;
}

}  // namespace

CommandRunner RegisterCannedUpstream(CLI::App& app) {
  auto o = std::make_shared<gateway::CannedUpstreamOptions>();
  app.add_option("--host", o->host, "Listen address");
  app.add_option("--port", o->port, "Listen port (0 = any free port)");
  app.add_option("--io-threads", o->io_threads, "HTTP I/O threads")->check(CLI::Range(1, 64));
  app.add_option("--model", o->model, "Model id it claims to serve");
  return [o] { return RunCannedUpstream(*o); };
}

CommandRunner RegisterGateway(CLI::App& app) {
  auto f = std::make_shared<GatewayFlags>();
  app.add_option("--config", f->config, "gateway.yaml: tiers, routing, ledger, budgets, keys")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--host", f->host, "Listen address (overrides server.host)");
  app.add_option("--port", f->port, "Listen port, 0 = any free port (overrides server.port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--ledger", f->ledger,
                 "Cost ledger: a SQLite path or postgresql:// URL (overrides ledger.url)");
  app.add_option("--log-level", f->log_level, "trace, debug, info, warn, error, off");
  app.add_option("--drain-grace", f->drain_grace_s, "Seconds in-flight requests get on shutdown")
      ->check(CLI::Range(0.0, 3600.0));
  CLI::App* cal = app.add_subcommand(
      "calibrate", "Fit routing.cascade.min_mean_logprob to a target escalation share");
  cal->add_option("--golden", f->calibrate.golden,
                  "Golden set (JSONL: messages or prompt, optional max_tokens per line)")
      ->required()
      ->check(CLI::ExistingFile);
  cal->add_option("--target-share", f->calibrate.target_share,
                  "Share of requests to escalate, 0..1 (default 0.3)")
      ->check(CLI::Range(0.0, 1.0));
  return [f, cal] { return cal->parsed() ? RunCalibrate(*f) : RunGateway(*f); };
}

}  // namespace brisk
