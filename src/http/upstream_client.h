// HTTP/1.1 client for the gateway's upstreams (`brisk serve` replicas or any
// OpenAI-compatible server), on the gateway's io_context.
//
// One UpstreamClient per upstream base URL (http://host:port[/base]). It
// keeps idle keep-alive connections for reuse (a request takes an idle one or
// opens a new one; at most `max_idle` stay open), so a proxied request costs
// no TCP handshake in steady state. Responses stream: the head, then each
// piece of body as it arrives (chunked framing removed), then the end. Nothing
// throws; every failure arrives as a Status in on_done.
//
// Failure kinds matter to the caller's retry rule (retry on another replica
// only if nothing was sent to the client yet): a connect failure, a reset
// before the head, or a head timeout come with StatusCode::kUnavailable; a
// failure after the head (connection lost mid-body, a stalled body) with
// kDataLoss; Cancel() with kCancelled. A reused idle connection that fails
// before any response byte (the server had closed it while idle, so the
// request was never processed) is retried once on a new connection, unseen
// by the caller; idle connections the server has visibly closed are
// skipped before use.
//
// Lifetimes: calls may outlive the client (their connections then close when
// they end); the client and its calls must not outlive the io_context.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/headers.h"
#include "util/status.h"

namespace brisk::http {

struct UpstreamRequest {
  std::string method = "POST";
  std::string path;  // "/v1/chat/completions" (the base path is prepended)
  Headers headers;   // extra headers (Authorization, Content-Type, x-request-id, ...)
  std::string body;
};

// Run on the client's executor, one call's in order and never concurrently.
// The call drops them after on_done, so they may hold the caller (which may
// hold the call) without a leak.
struct UpstreamCallbacks {
  // The status line and headers; called once, before any on_data.
  std::function<void(int status, const Headers& headers)> on_head;
  // A piece of the body (chunked framing removed); never empty.
  std::function<void(std::string_view data)> on_data;
  // Exactly once, last: ok at the end of the body, else why it failed.
  std::function<void(const Status& status)> on_done;
  // Optional. When the request is about to be written on a connection:
  // `reused` = an idle keep-alive one (no connect), else one just opened
  // (the gateway's `connect` stage ends here).
  std::function<void(bool reused)> on_connected;
  // Optional. The trailer fields of a chunked response (e.g. Server-Timing),
  // once, just before a successful on_done; not called when there were none.
  std::function<void(const Headers& trailers)> on_trailers;
};

struct UpstreamOptions {
  // "http://127.0.0.1:8000" or "http://host:port/base" (no https). A trailing
  // "/v1" is dropped, as OpenAI clients spell base URLs that way and request
  // paths already start with /v1 (ParseUrl).
  std::string base_url;
  // Resolving the host (once; again after a failed connect) plus connecting.
  std::chrono::milliseconds connect_timeout{2000};
  // Sending the request, then again from its last byte to the response head
  // (a generation's head comes when the engine admits it: streaming answers
  // start at once).
  std::chrono::milliseconds head_timeout{60000};
  // Between two body reads of a response (a stalled stream).
  std::chrono::milliseconds idle_timeout{120000};
  int max_idle = 64;
};

// A request in flight; Cancel() closes its connection with a reset (the
// upstream sees the disconnect at once and stops generating) and on_done gets
// kCancelled unless it already ran. Thread-safe; no-op after on_done.
class UpstreamCall {
 public:
  virtual ~UpstreamCall() = default;
  virtual void Cancel() = 0;
};

class UpstreamClient {
 public:
  static Expected<std::unique_ptr<UpstreamClient>> Create(boost::asio::any_io_executor executor,
                                                          UpstreamOptions options);
  virtual ~UpstreamClient() = default;
  // Thread-safe. Callbacks run on the client's executor (one call's callbacks
  // in order, never concurrently).
  virtual std::shared_ptr<UpstreamCall> Send(UpstreamRequest request,
                                             UpstreamCallbacks callbacks) = 0;
  // Buffered convenience (health checks, /load): the status and whole body
  // (at most 16 MiB, else kResourceExhausted). `done` runs on the executor.
  virtual void Fetch(UpstreamRequest request,
                     std::function<void(Expected<std::pair<int, std::string>>)> done) = 0;
  virtual const std::string& base_url() const = 0;
  // Connections open now (idle + busy), for tests and metrics.
  virtual int open_connections() const = 0;
};

// For command-line tools (calibrate, eval): runs `io` until `client`
// (created on io's executor) has fetched `req`; the status and whole body.
Expected<std::pair<int, std::string>> FetchBlocking(UpstreamClient& client,
                                                    boost::asio::io_context& io,
                                                    UpstreamRequest req);

}  // namespace brisk::http
