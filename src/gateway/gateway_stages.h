// The gateway's per-stage latency budget for one proxied request, and its
// trace context (obs/trace_context.h).
//
// Boundaries, each a steady_clock reading on the gateway:
//   arrival -> started (admission: header gate, parse, route plan, budget)
//   -> picked (route: the answering replica chosen; earlier failed attempts
//      and cascade tiers count here)
//   -> connected (connect: 0 on a reused keep-alive connection)
//   -> upstream done (the upstream's stages from its Server-Timing, header or
//      trailer: tokenize, queue, prefill, decode; `network` is the rest of
//      the exchange: transfer both ways, the engine's HTTP parse and write)
//   -> written (write: rewrite, ledger row, answer handed to the socket).
// So the stages add up to `total` (arrival -> written) exactly.
//
// Not thread-safe: ProxiedRequest calls it under its mutex.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "obs/access_log.h"
#include "obs/server_timing.h"
#include "obs/trace_context.h"

namespace brisk::gateway {

struct GatewayCore;
struct LedgerRow;

// The access-log record of a finished request, from its ledger row (no
// remote address: the gateway's log names the caller by key and tenant).
AccessLogRecord AccessRecordOf(const LedgerRow& row);

class GatewayStages {
 public:
  using Clock = std::chrono::steady_clock;

  // `traceparent`: the client's header ("" or invalid: a new trace).
  GatewayStages(Clock::time_point arrival, std::string_view traceparent);

  const TraceContext& trace() const { return trace_; }
  // What the upstream gets: this gateway's span as its parent.
  std::string UpstreamTraceparent() const { return trace_.Traceparent(); }

  void Started(Clock::time_point t) { started_ = t; }
  // Each upstream attempt: the last one's boundaries count.
  void Picked(Clock::time_point t);
  void Connected(Clock::time_point t) { connected_ = t; }
  // A Server-Timing value from the upstream (its head, then its trailer:
  // the later replaces the earlier; one without engine stages is ignored).
  void UpstreamTiming(std::string_view value);
  void UpstreamDone(Clock::time_point t) { upstream_done_ = t; }

  // For a stream's head: the stages known before the first byte
  // (admission, route, connect, and the upstream head's).
  std::string HeadValue(Clock::time_point now) const;
  // Every stage, ending at `written`; FinishedValue() is then the header or
  // trailer value (with total).
  const std::vector<TimedStage>& Finish(Clock::time_point written);
  std::string FinishedValue() const;
  double total_ms() const { return total_ms_; }
  const std::vector<TimedStage>& stages() const { return stages_; }

  // Histograms (brisk_gateway_request_stage_seconds) and, with an OTLP
  // exporter, the spans. After Finish().
  void Record(GatewayCore& core, std::string_view name, int status) const;
  // Writes `record` to the gateway's access log (logging.access_log) with
  // this trace id and, once Finish() ran, the stages and their total.
  void WriteAccess(GatewayCore& core, AccessLogRecord record) const;

 private:
  Clock::time_point arrival_, started_, picked_, connected_, upstream_done_;
  std::chrono::system_clock::time_point arrival_wall_;
  TraceContext trace_;
  std::vector<TimedStage> upstream_;  // the upstream's tokenize/queue/prefill/decode
  std::vector<TimedStage> stages_;
  double total_ms_ = -1;
};

}  // namespace brisk::gateway
