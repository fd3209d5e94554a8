// `brisk gateway`: an OpenAI-compatible HTTP server in front of tiers of
// upstream engines (`brisk serve` replicas or any OpenAI-compatible server).
//
//   POST /v1/chat/completions, /v1/completions   routed, proxied, priced, ledgered
//   GET  /v1/models                              "auto", each tier and its model id
//   GET  /v1/cost?group_by=&from=&to=&by_day=    rollups from the ledger
//   GET  /v1/budgets                             limits and current spend
//   GET  /health, /ready, /metrics, /dashboard   (dashboard: gateway/dashboard.h)
//
// A request's path: the header gate (API key: tenant, key name, feature)
// -> parse the body (model, stream, prompt facts) -> Router (tier or cascade)
// -> budget check -> per tier, ReplicaPicker chooses a replica and the
// http::UpstreamClient sends it; failures before any byte reached the client retry
// on another replica; 429s from every replica answer 429 with the smallest
// Retry-After -> the answer is rewritten (usage and cost) on its way -> the
// ledger row is committed -> the response (or the stream's "[DONE]")
// completes. See gateway/proxied_request.h.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "gateway/gateway_config.h"
#include "gateway/ledger.h"
#include "obs/metrics.h"
#include "util/status.h"

namespace brisk::gateway {

struct GatewayCore;

class GatewayServer {
 public:
  // Starts listening and health-checking the upstreams. The ledger must be
  // open (OpenLedger).
  static Expected<std::unique_ptr<GatewayServer>> Start(GatewayConfig config,
                                                        std::unique_ptr<Ledger> ledger);
  ~GatewayServer();

  int port() const;
  // Graceful shutdown (cli/serve_until_signal.h): BeginDrain stops accepting
  // (/ready and new requests answer 503); requests in flight run on until
  // active_requests() is 0 or the caller gives up; Stop closes every
  // connection and flushes the ledger.
  void BeginDrain();
  int64_t active_requests() const;
  void Stop();

 private:
  explicit GatewayServer(std::shared_ptr<GatewayCore> core);
  std::shared_ptr<GatewayCore> core_;
};

}  // namespace brisk::gateway
