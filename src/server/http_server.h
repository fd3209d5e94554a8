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
// While a response is pending or streaming the socket stays armed for reading, so a client
// that goes away is noticed at once and Responder::OnClose fires: that is how generation is
// cancelled.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "util/status.h"

namespace brisk::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // raw target "/v1/models?x=1"
  std::string path;    // "/v1/models": target without query or fragment, not percent-decoded
  std::string body;    // decoded from Content-Length or chunked framing
  std::string remote;  // "127.0.0.1:5555", "[::1]:5555"
  Headers headers;     // in arrival order, names as sent

  // Value of the first header with this name (case-insensitive); "" if absent.
  std::string_view Header(std::string_view name) const;
};

namespace internal {
class Connection;
}

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

  // `cb` runs once, on an IO thread, if the client disconnects or the connection fails before
  // the response completed: while the request waits in a queue, while a non-stream response is
  // computed, mid-stream, when a stream consumer falls max_write_queue_bytes behind, or when the
  // Server stops. Registering after that already happened runs `cb` at once on the caller's
  // thread. Once the response completed (Send/End reached the connection), callbacks are dropped
  // and never run.
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
  size_t max_body_bytes = 4 << 20;     // larger => 413 and close
  size_t max_header_bytes = 64 << 10;  // larger => 431 and close
  // The whole header and body must arrive within this, counted from the request's first byte
  // (slowloris) => 408 and close.
  std::chrono::milliseconds request_timeout{10000};
  // A keep-alive connection waiting for its next request is closed after this; also the limit
  // for flushing a completed response to a client that stopped reading.
  std::chrono::milliseconds idle_timeout{60000};
  // A stream consumer this far behind (bytes still queued when a new Write arrives) is
  // disconnected and OnClose fires. Send() bodies are not limited by this.
  size_t max_write_queue_bytes = 8 << 20;
  // Beyond this many open connections a new one gets 503 and is closed.
  int max_connections = 10000;
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
