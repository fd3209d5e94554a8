// Exports request spans to an OpenTelemetry collector over OTLP/HTTP with
// the JSON encoding (POST <endpoint>/v1/traces, Content-Type
// application/json): per request one server span (the caller's traceparent
// as parent) and one child span per latency stage (obs/server_timing.h).
//
// Off the request path: Export() only queues (bounded; when full the span is
// dropped and counted in `brisk_otlp_spans_dropped_total`); a background
// thread sends batches of up to 256 requests with a small blocking HTTP/1.1
// client (5 s timeouts, Connection: close). A collector that is down costs
// dropped spans and a warning, never serving time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "obs/metrics.h"
#include "obs/server_timing.h"
#include "obs/trace_context.h"
#include "util/status.h"

namespace brisk {

struct RequestSpan {
  TraceContext trace;                           // trace id, this span's id, the caller's span id
  std::string name;                             // "POST /v1/chat/completions"
  std::chrono::system_clock::time_point start;  // the request's arrival (wall clock)
  std::vector<TimedStage> stages;               // contiguous from `start`: child spans
  double total_ms = 0;                          // the server span's duration
  int http_status = 0;
  std::vector<std::pair<std::string, std::string>> attributes;  // string-valued
};

// The OTLP/JSON request body for `spans` (resourceSpans -> scopeSpans ->
// spans); ids in hex, times as decimal strings of Unix nanoseconds, as the
// OTLP JSON mapping asks.
std::string OtlpTracesJson(std::string_view service_name, const std::vector<RequestSpan>& spans);

class SpanExporter {
 public:
  static constexpr size_t kMaxQueued = 2048;

  // `endpoint`: "http://host:port[/base]" (no https); kInvalidArgument
  // otherwise. Registers brisk_otlp_spans_{exported,dropped}_total in `registry`.
  static Expected<std::unique_ptr<SpanExporter>> Create(std::string_view endpoint,
                                                        std::string service_name,
                                                        metrics::Registry& registry);
  // Sends what is queued (at most 2 s more), then stops.
  ~SpanExporter();
  SpanExporter(const SpanExporter&) = delete;
  SpanExporter& operator=(const SpanExporter&) = delete;

  // Queues one request's spans. Never blocks on I/O; never throws.
  void Export(RequestSpan span);

 private:
  SpanExporter(std::string host, std::string port, std::string path, std::string service_name,
               metrics::Registry& registry);
  void Run();
  // One POST; ok when the collector answered 2xx.
  Status Post(const std::string& body);

  const std::string host_, port_, path_, service_name_;
  metrics::Counter* exported_;
  metrics::Counter* dropped_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestSpan> queue_;
  bool stop_ = false;
  std::chrono::steady_clock::time_point last_warning_{};
  std::thread worker_;
};

}  // namespace brisk
