// Generic asynchronous HTTP/1.1 server (Boost.Beast over Asio) for the OpenAI front door.
//
// It knows nothing about LLMs or JSON: a Handler gets a parsed Request and a Responder, and
// answers now or later, from any thread, with one response or a chunked stream. N IO threads
// run one io_context; each connection is a small heap object on its own strand, so thousands
// of idle or streaming connections cost no threads.
//
// Per connection: HTTP/1.1 keep-alive (HTTP/1.0 closes unless it asks for keep-alive),
// requests answered one at a time in order (pipelined bytes wait in the buffer), limits on
// header and body size (431 / 413), a deadline for the whole request (408, against slowloris),
// an idle timeout between requests, and a bound on bytes queued for a slow stream consumer.
//
// Before a body is read: strict framing (HTTP/1.1 needs exactly one Host, no obsolete line
// folding: 400), the Host allow-list (421), the on_headers hook (e.g. the API key: its answer
// goes out without reading the body) and the server-wide budget of body bytes in flight (503).
// While a body is read, every byte of it counts, chunked framing included, and no framing
// element (chunk-size line, trailer section) may grow without bound; see ServerOptions.
//
// Disconnects and cancellation (Responder::OnClose). While a response is pending or
// streaming the socket stays watched, so a client that goes away is noticed at once:
//  - EOF (FIN) while a request is incomplete: the request is dropped (no handler call).
//  - EOF after a complete request is a half-close (shutdown(SHUT_WR)), not a cancel: the
//    response is still served, then the connection closes. Pipelined requests that arrived
//    complete before the EOF are served too.
//  - A client that really went away is told apart by its reset: a closed socket answers any
//    byte we send with RST. So on EOF before the response has started, an HTTP/1.1 client
//    gets an interim "100 Continue" (legal at any time before the final response; a
//    half-closed client skips it like any 1xx), and a reset or a failed write closes the
//    connection and fires OnClose. A stream whose headers were already sent learns it at
//    its next Write. HTTP/1.0 clients cannot be sent a 1xx: after their EOF the response is
//    computed and the write then fails.
//  - While reading is paused (a pending response with 64 KiB of pipelined input buffered),
//    the socket is polled every 100 ms for a shutdown or reset, with the same rules.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "http/headers.h"
#include "util/status.h"

namespace brisk::http {

namespace internal {
class Connection;
class BodyLease;
}  // namespace internal

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // raw target "/v1/models?x=1"
  std::string path;    // "/v1/models": target without query or fragment, not percent-decoded
  std::string body;    // decoded from Content-Length or chunked framing
  std::string remote;  // "127.0.0.1:5555", "[::1]:5555"
  Headers headers;     // header section in arrival order, names as sent (trailers dropped)

  // This body's share of ServerOptions::max_inflight_body_bytes. Copies of the Request share
  // it; the bytes return to the budget when the last copy is destroyed or releases it. A
  // handler that moves `body` out and keeps it long should call ReleaseBody() only when done
  // with it, or accept that the budget no longer sees those bytes.
  std::shared_ptr<internal::BodyLease> body_lease;

  // Value of the first header with this name (case-insensitive); "" if absent.
  std::string_view Header(std::string_view name) const;

  // Frees the body and drops this copy's hold on the body budget.
  void ReleaseBody();
};

// An answer given before the body is read (ServerOptions::on_headers). It is sent with
// "Connection: close" and the body, if any, is discarded unread.
struct EarlyResponse {
  int status = 400;
  Headers headers;  // as for Responder::Send
  std::string body;
};

// Thread-safe handle for answering one request. Every method may be called from any thread: it
// posts to the connection's strand and returns at once (writes are queued, never block the
// caller). Calls after the client went away, after the response completed, or after the Server
// stopped are no-ops. Calls from one thread take effect in call order.
//
// Dropping the last reference without answering is a bug in the caller: the server then answers
// 500 (nothing sent yet) or closes the connection (mid-stream).
class Responder {
 public:
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  // One complete response with Content-Length. `headers` are extra headers, e.g.
  // {"Content-Type", "application/json"}; Content-Length / Transfer-Encoding given here are
  // ignored, "Connection: close" closes the connection after the response. Date and
  // "Server: brisk" are added unless given. A status outside [200, 999] becomes 500.
  void Send(int status, Headers headers, std::string body);

  // Streaming: the status line and headers with Transfer-Encoding: chunked (HTTP/1.0 clients:
  // no chunking, the body ends when the connection closes) and Cache-Control: no-cache unless
  // given. Then each non-empty Write is one chunk, in order; End() writes the last chunk.
  void StartStream(int status, Headers headers);
  void Write(std::string data);
  void End();
  // End() with a trailer section after the last chunk (e.g. Server-Timing, which is known only
  // once the stream is done; announce it with a "Trailer" header in StartStream). Names and
  // values must be valid header text. HTTP/1.0 clients (no chunking) get no trailers.
  void End(Headers trailers);

  // `cb` runs once, on an IO thread, if the client goes away or the connection fails before
  // the response completed: while the request waits in a queue, while a non-stream response is
  // computed, mid-stream, when a stream consumer falls max_write_queue_bytes behind, or when the
  // Server stops. A half-close (EOF after the complete request) is not going away; see the
  // rules at the top of this file. Registering after that already happened runs `cb` at once on the
  // caller's thread. Once the response completed (Send/End reached the connection), callbacks are
  // dropped and never run.
  void OnClose(std::function<void()> cb);

  // True once the client went away before the response completed (OnClose fired).
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  // Bytes handed to Write/Send/StartStream but not yet written to the socket.
  size_t queued_bytes() const;

 private:
  friend class internal::Connection;
  Responder(std::shared_ptr<internal::Connection> conn, uint64_t seq);

  // Both run on the connection's strand; whichever comes first settles the Responder.
  void FireClose();  // client gone: runs the callbacks
  void Finish();     // response complete: drops the callbacks

  const std::shared_ptr<internal::Connection> conn_;  // keeps the connection (and server core)
  const uint64_t seq_;                                // which request on the connection
  std::atomic<bool> closed_{false};
  std::atomic<bool> ended_{false};  // Send or End called (caller side)
  std::mutex mu_;
  bool settled_ = false;  // guarded by mu_
  std::vector<std::function<void()>> on_close_;
};

// Runs on an IO thread and must not block. Keep `res` for as long as the answer takes.
using Handler = std::function<void(Request&& req, std::shared_ptr<Responder> res)>;

struct ServerOptions {
  std::string host = "127.0.0.1";  // address or resolvable name; "0.0.0.0" / "::" for all
  int port = 0;                    // 0 => ephemeral, see Server::port()
  int io_threads = 1;
  // Larger => 413 and close. A chunked body counts as sent: its chunk-size lines (extensions
  // included) and CRLFs count with the data; one chunk-size line may not exceed 4 KiB (400).
  size_t max_body_bytes = 4 << 20;
  // Larger => 431 and close. The trailer section of a chunked body has its own bound: 8 KiB
  // and 64 fields (431). Trailers are parsed for framing, then dropped.
  size_t max_header_bytes = 64 << 10;
  // The whole header and body must arrive within this, counted from the request's first byte
  // (slowloris) => 408 and close.
  std::chrono::milliseconds request_timeout{10000};
  // A keep-alive connection waiting for its next request is closed after this; also the limit
  // for flushing a completed response to a client that stopped reading.
  std::chrono::milliseconds idle_timeout{60000};
  // A stream consumer this far behind (bytes still queued when a new Write arrives) is
  // disconnected and OnClose fires. Send() bodies are not limited by this.
  size_t max_write_queue_bytes = 8 << 20;
  // Beyond this many open connections a new one gets 503 and is closed. 0: derived from the
  // process's file limit (RLIMIT_NOFILE minus a reserve of 64 + 1/16 of it, for the model
  // file, logs, the engine and transient rejections); a larger value is lowered to that (with
  // a warning), see Server::max_connections(). When accept fails for lack of descriptors
  // anyway (other parts of the process use them), a spare descriptor is given up to accept
  // the connection, answer 503 and close it, so clients are told instead of left hanging.
  int max_connections = 0;
  // Budget of request body bytes in flight across the server; 0 = unlimited. It covers a
  // body from its header section until the Request carrying it is destroyed (see
  // Request::body_lease): a Content-Length body takes its whole length before any byte is
  // read, a chunked body its buffer as it grows. A request that does not fit gets 503 with
  // Retry-After: 1 and is closed without buffering more. Raised to max_body_bytes if lower,
  // so one largest body always fits an idle server. 192 MiB leaves room under the 256 MiB
  // memory-growth budget of the attack soak for what admitted requests cost besides their
  // bodies (a 4 MiB prompt being tokenized, parse buffers: ~50 MiB measured by
  // bench/attack_soak.py).
  size_t max_inflight_body_bytes = size_t{192} << 20;
  // Accepted Host header names (case-insensitive; the port is ignored; IPv6 literals with or
  // without brackets); empty: any. Against DNS rebinding when no API key protects the
  // server: a request naming another host gets 421 and is closed before its body is read. A
  // request without Host (HTTP/1.0) is accepted.
  std::vector<std::string> allowed_hosts;
  // Called on an IO thread once a request's header section is parsed and checked, before any
  // body byte is read (and before "100 Continue" is sent). `head` has everything but the
  // body. Returning a response sends it with "Connection: close" and discards the body; the
  // handler is not called. Must not block. Typical use: method/path, Content-Type and API
  // key checks (http/header_gate.h), so unauthenticated clients cannot make the server
  // buffer bodies.
  std::function<std::optional<EarlyResponse>(const Request& head)> on_headers;
};

namespace internal {
struct ServerCore;
}

class Server {
 public:
  // Binds, listens and starts the IO threads. Errors: UNAVAILABLE if the address is taken,
  // INVALID_ARGUMENT for bad options or an unresolvable host.
  static Expected<std::unique_ptr<Server>> Start(ServerOptions opts, Handler handler);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;  // the bound port
  int num_connections() const;
  int max_connections() const;         // effective, after the file-limit cap
  size_t inflight_body_bytes() const;  // body bytes now held against the budget

  // Graceful drain: closes the listener (new connects are refused once this returns, unless it
  // is called from an IO thread) and idle keep-alive connections. A request being received or
  // answered completes, with "Connection: close" where headers are not yet sent; its connection
  // closes after the response. Idempotent.
  void StopAccepting();

  // Hard stop: closes every connection (pending Responders see OnClose), joins the IO threads.
  // Idempotent; the destructor calls it. Must not be called from a handler or OnClose callback.
  // Responders may outlive the Server; their calls are then no-ops.
  void Stop();

 private:
  explicit Server(std::shared_ptr<internal::ServerCore> core);

  std::shared_ptr<internal::ServerCore> core_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopped_{false};
};

}  // namespace brisk::http
