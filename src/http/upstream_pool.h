// The keep-alive side of UpstreamClient (upstream_client.h): one upstream's
// TCP connections, idle ones kept for reuse, and its resolved addresses.
// Internal to the client; a header of its own so upstream_client.cc holds
// only the exchange of one request.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "http/upstream_client.h"
#include "http/url.h"

namespace brisk::http::internal {

using UpstreamEndpoints = std::vector<boost::asio::ip::tcp::endpoint>;

// One TCP connection: idle in the pool, or used by one call at a time. It
// has no executor of its own; each operation's handler is bound to the
// strand of the call using it. Counted in the pool's open connections from
// construction until Close().
struct UpstreamConnection {
  UpstreamConnection(const boost::asio::any_io_executor& executor,
                     std::shared_ptr<std::atomic<int>> open);
  ~UpstreamConnection() { Close(); }
  UpstreamConnection(const UpstreamConnection&) = delete;
  UpstreamConnection& operator=(const UpstreamConnection&) = delete;

  // Idempotent. The object must outlive an operation still pending on it
  // (that completes with an error after the close, and touches `buffer`).
  void Close();
  // Close with a reset instead of a FIN: the upstream learns at once that
  // we are gone.
  void Abort();
  // False when the server closed it (EOF), reset it, or sent bytes unasked
  // (e.g. a 408 before closing) while it was idle.
  bool LooksAlive();

  boost::asio::ip::tcp::socket socket;
  boost::beast::flat_buffer buffer;  // bytes past the parser's need (empty between responses)
  std::shared_ptr<std::atomic<int>> open_count;
  bool closed = false;
};

// What the client and its calls share; calls keep it alive, so a call may
// outlive the client. Thread-safe.
class UpstreamPool {
 public:
  UpstreamPool(boost::asio::any_io_executor executor, ServerUrl url, UpstreamOptions options);

  const boost::asio::any_io_executor& executor() const { return executor_; }
  const ServerUrl& url() const { return url_; }
  const UpstreamOptions& options() const { return options_; }
  // "host:port" ("[v6]:port") for the Host header.
  const std::string& host_header() const { return host_header_; }
  int open_connections() const { return open_count_->load(std::memory_order_relaxed); }

  std::unique_ptr<UpstreamConnection> NewConnection();
  // The most recently used idle connection that still looks alive, or null.
  std::unique_ptr<UpstreamConnection> TakeIdle();
  // Keeps a connection that finished a response cleanly, up to max_idle.
  void Release(std::unique_ptr<UpstreamConnection> conn);

  // Null until the host name is resolved (a numeric host never needs it).
  std::shared_ptr<const UpstreamEndpoints> endpoints();
  void SetEndpoints(std::shared_ptr<const UpstreamEndpoints> endpoints);
  // After a failed connect: a name's addresses may have moved (a restarted
  // pod), so the next call resolves again.
  void ForgetResolvedEndpoints();

  // The client is gone: closes the idle connections now, the busy ones when
  // their calls end.
  void Shutdown();

 private:
  const boost::asio::any_io_executor executor_;
  const ServerUrl url_;
  const UpstreamOptions options_;
  std::string host_header_;
  bool numeric_host_ = false;
  const std::shared_ptr<std::atomic<int>> open_count_ = std::make_shared<std::atomic<int>>(0);
  std::mutex mu_;
  std::vector<std::unique_ptr<UpstreamConnection>> idle_;  // guarded by mu_; most recent last
  std::shared_ptr<const UpstreamEndpoints> endpoints_;     // guarded by mu_
  bool shut_ = false;                                      // guarded by mu_
};

}  // namespace brisk::http::internal
