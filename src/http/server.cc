#include "http/server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <exception>
#include <future>
#include <system_error>

#include "http/connection.h"
#include "util/log.h"

namespace brisk::http {

std::string_view Request::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (boost::beast::iequals(k, name)) return v;
  }
  return {};
}

void Request::ReleaseBody() {
  std::string().swap(body);
  body_lease.reset();
}

// ---------------------------------------------------------------------------------------------
// Responder

Responder::Responder(std::shared_ptr<internal::Connection> conn, uint64_t seq)
    : conn_(std::move(conn)), seq_(seq) {}

Responder::~Responder() {
  if (ended_.load(std::memory_order_relaxed) || closed()) return;
  conn_->Post([c = conn_, seq = seq_] { c->OnResponderDropped(seq); });
}

void Responder::Send(int status, Headers headers, std::string body) {
  if (ended_.exchange(true)) return;
  conn_->Post(
      [c = conn_, seq = seq_, status, h = std::move(headers), b = std::move(body)]() mutable {
        c->DoSend(seq, status, std::move(h), std::move(b));
      });
}

void Responder::StartStream(int status, Headers headers) {
  if (ended_.load(std::memory_order_relaxed)) return;
  conn_->Post([c = conn_, seq = seq_, status, h = std::move(headers)]() mutable {
    c->DoStartStream(seq, status, std::move(h));
  });
}

void Responder::Write(std::string data) {
  if (data.empty() || ended_.load(std::memory_order_relaxed) || closed()) return;
  const size_t n = data.size();
  conn_->pending_bytes.fetch_add(n, std::memory_order_relaxed);
  bool posted = conn_->Post(
      [c = conn_, seq = seq_, d = std::move(data)]() mutable { c->DoWrite(seq, std::move(d)); });
  if (!posted) conn_->pending_bytes.fetch_sub(n, std::memory_order_relaxed);
}

void Responder::End() {
  if (ended_.exchange(true)) return;
  conn_->Post([c = conn_, seq = seq_] { c->DoEnd(seq); });
}

void Responder::End(Headers trailers) {
  if (ended_.exchange(true)) return;
  conn_->Post(
      [c = conn_, seq = seq_, t = std::move(trailers)]() mutable { c->DoEnd(seq, std::move(t)); });
}

void Responder::OnClose(std::function<void()> cb) {
  if (!cb) return;
  {
    std::lock_guard lock(mu_);
    if (!settled_) {
      on_close_.push_back(std::move(cb));
      return;
    }
    if (!closed()) return;  // completed normally: never fires
  }
  cb();
}

size_t Responder::queued_bytes() const {
  return conn_->pending_bytes.load(std::memory_order_relaxed);
}

void Responder::FireClose() {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mu_);
    if (settled_) return;
    settled_ = true;
    closed_.store(true, std::memory_order_release);
    callbacks.swap(on_close_);
  }
  for (auto& cb : callbacks) {
    try {
      cb();
    } catch (const std::exception& e) {
      log::Error("[http] OnClose callback threw: {}", e.what());
    } catch (...) {
      log::Error("[http] OnClose callback threw a non-exception");
    }
  }
}

void Responder::Finish() {
  std::vector<std::function<void()>> callbacks;  // destroyed outside the lock
  std::lock_guard lock(mu_);
  if (settled_) return;
  settled_ = true;
  callbacks.swap(on_close_);
}

// ---------------------------------------------------------------------------------------------
// ServerCore

namespace internal {
namespace {

constexpr std::string_view kBusyResponse =
    "HTTP/1.1 503 Service Unavailable\r\nServer: brisk\r\nContent-Type: text/plain\r\n"
    "Content-Length: 21\r\nRetry-After: 1\r\nConnection: close\r\n\r\ntoo many connections\n";

uint64_t FileLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return rl.rlim_cur;
}

int OpenSpareFd() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

int ConnectionCap(int requested, uint64_t nofile) {
  const uint64_t reserve = 64 + nofile / 16;
  const uint64_t by_files = nofile > reserve ? nofile - reserve : 1;
  const uint64_t cap = std::min<uint64_t>(by_files, INT32_MAX);
  if (requested <= 0) return static_cast<int>(cap);
  return static_cast<int>(std::min<uint64_t>(cap, static_cast<uint64_t>(requested)));
}

ServerCore::ServerCore(ServerOptions o, Handler h)
    : opts(std::move(o)),
      handler(std::move(h)),
      max_connections(ConnectionCap(opts.max_connections, FileLimit())),
      body_budget(std::make_shared<BodyBudget>(
          opts.max_inflight_body_bytes == 0
              ? 0
              : std::max(opts.max_inflight_body_bytes, opts.max_body_bytes))),
      ioc(std::max(1, opts.io_threads)),
      work(net::make_work_guard(ioc)),
      accept_strand(net::make_strand(ioc)),
      acceptor(accept_strand),
      accept_retry(accept_strand) {}

Status ServerCore::Listen() {
  beast::error_code ec;
  tcp::endpoint ep;
  auto addr = net::ip::make_address(opts.host, ec);
  if (!ec) {
    ep = tcp::endpoint(addr, static_cast<unsigned short>(opts.port));
  } else {
    tcp::resolver resolver(ioc);
    auto results = resolver.resolve(opts.host, std::to_string(opts.port), ec);
    if (ec || results.empty()) {
      return InvalidArgument("http server: cannot resolve host '{}': {}", opts.host,
                             ec ? ec.message() : "no addresses");
    }
    ep = results.begin()->endpoint();
  }
  acceptor.open(ep.protocol(), ec);
  if (ec) return Internal("http server: socket: {}", ec.message());
  acceptor.set_option(net::socket_base::reuse_address(true), ec);
  acceptor.bind(ep, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable, fmt::format("http server: cannot bind {}:{}: {}",
                                                        opts.host, opts.port, ec.message()));
  }
  acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable, fmt::format("http server: cannot listen on {}:{}: {}",
                                                        opts.host, opts.port, ec.message()));
  }
  auto local = acceptor.local_endpoint(ec);
  if (ec) return Internal("http server: local_endpoint: {}", ec.message());
  port = local.port();
  spare_fd = OpenSpareFd();
  if (opts.max_connections > max_connections) {
    log::Warn("[http] max_connections {} lowered to {}: the file limit (ulimit -n) is {}",
              opts.max_connections, max_connections, FileLimit());
  }
  return Status::Ok();
}

void ServerCore::DoAccept() {
  // `this` is safe: handlers run only while an IO thread runs, and the Server owning the
  // threads holds the core.
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    OnAccept(ec, std::move(socket));
  });
}

void ServerCore::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
  if (ec) {
    if ((ec == net::error::no_descriptors || ec.value() == ENFILE) && RejectWithSpareFd()) {
      DoAccept();
      return;
    }
    // Usually EMFILE/ENFILE: back off instead of spinning; established connections go on.
    static thread_local Clock::time_point last_log{};
    if (Clock::now() - last_log > std::chrono::seconds(1)) {
      log::Warn("[http] accept failed: {}; retrying", ec.message());
      last_log = Clock::now();
    }
    accept_retry.expires_after(std::chrono::milliseconds(50));
    accept_retry.async_wait([this](beast::error_code wec) {
      if (!wec && acceptor.is_open()) DoAccept();
    });
    return;
  }
  std::shared_ptr<Connection> conn;
  bool busy = false;
  {
    std::lock_guard lock(mu);
    if (draining || stopping) {
      beast::error_code cec;
      socket.close(cec);
      return;  // the listener is being closed
    }
    if (num_connections.load(std::memory_order_relaxed) >= max_connections) {
      busy = true;
    } else {
      const uint64_t id = next_id++;
      conn = std::make_shared<Connection>(shared_from_this(), std::move(socket), id);
      conns.emplace(id, conn);
      num_connections.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (busy) {
    RejectBusy(std::move(socket));
  } else {
    net::post(conn->executor(), [conn] { conn->Start(); });
  }
  DoAccept();
}

bool ServerCore::RejectWithSpareFd() {
  if (spare_fd < 0) spare_fd = OpenSpareFd();  // a descriptor may have come free meanwhile
  if (spare_fd < 0) return false;
  ::close(spare_fd);
  spare_fd = -1;
  const int fd =
      ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd >= 0) {
    // A fresh socket's send buffer takes this at once. Reading what the client already sent
    // first makes close() send FIN rather than a reset that could discard the answer.
    char sink[4096];
    for (int i = 0; i < 16 && ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; ++i) {
    }
    [[maybe_unused]] ssize_t n =
        ::send(fd, kBusyResponse.data(), kBusyResponse.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(fd, SHUT_WR);
    ::close(fd);
  }
  spare_fd = OpenSpareFd();
  static thread_local Clock::time_point last_log{};
  if (fd >= 0 && Clock::now() - last_log > std::chrono::seconds(1)) {
    log::Warn("[http] out of file descriptors: answering new connections 503");
    last_log = Clock::now();
  }
  return fd >= 0;
}

void ServerCore::RejectBusy(tcp::socket socket) {
  auto s = std::make_shared<tcp::socket>(std::move(socket));
  net::async_write(*s, net::buffer(kBusyResponse), [s](beast::error_code, size_t) {
    beast::error_code ec;
    s->shutdown(tcp::socket::shutdown_send, ec);
    s->close(ec);
  });
}

void ServerCore::Unregister(uint64_t id) {
  std::lock_guard lock(mu);
  if (conns.erase(id) > 0) num_connections.fetch_sub(1, std::memory_order_relaxed);
}

std::vector<std::shared_ptr<Connection>> ServerCore::Snapshot() {
  std::vector<std::shared_ptr<Connection>> out;
  out.reserve(conns.size());
  for (auto& [id, weak] : conns) {
    if (auto c = weak.lock()) out.push_back(std::move(c));
  }
  return out;
}

void ServerCore::CloseListener() {
  beast::error_code ec;
  acceptor.close(ec);
  accept_retry.cancel();
  if (spare_fd >= 0) ::close(spare_fd);
  spare_fd = -1;
}

void ServerCore::StopAccepting() {
  std::vector<std::shared_ptr<Connection>> conns_now;
  {
    std::lock_guard lock(mu);
    if (draining || stopping) return;
    draining = true;
    conns_now = Snapshot();
  }
  if (ioc.get_executor().running_in_this_thread()) {
    net::post(accept_strand, [self = shared_from_this()] { self->CloseListener(); });
  } else {
    // Wait, so that a connect after StopAccepting() returns is refused.
    std::promise<void> done;
    net::post(accept_strand, [this, &done] {
      CloseListener();
      done.set_value();
    });
    done.get_future().wait();
  }
  for (auto& c : conns_now) net::post(c->executor(), [c] { c->Drain(); });
}

void ServerCore::Shutdown() {
  {
    std::unique_lock lock(post_mu);
    stopped = true;
  }
  std::vector<std::shared_ptr<Connection>> conns_now;
  {
    std::lock_guard lock(mu);
    stopping = true;
    draining = true;
    conns_now = Snapshot();
  }
  net::post(accept_strand, [self = shared_from_this()] { self->CloseListener(); });
  for (auto& c : conns_now) net::post(c->executor(), [c] { c->Close(); });
  work.reset();
}

void ServerCore::RunIoThread() {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      log::Error("[http] uncaught exception on an IO thread: {}", e.what());
    } catch (...) {
      log::Error("[http] uncaught non-exception on an IO thread");
    }
  }
}

}  // namespace internal

// ---------------------------------------------------------------------------------------------
// Server

Server::Server(std::shared_ptr<internal::ServerCore> core) : core_(std::move(core)) {}

Server::~Server() { Stop(); }

Expected<std::unique_ptr<Server>> Server::Start(ServerOptions opts, Handler handler) {
  if (!handler) return InvalidArgument("http server: no handler");
  if (opts.port < 0 || opts.port > 65535) {
    return InvalidArgument("http server: port {} out of range", opts.port);
  }
  if (opts.io_threads < 1) {
    return InvalidArgument("http server: io_threads must be >= 1, got {}", opts.io_threads);
  }
  if (opts.max_header_bytes == 0 || opts.max_connections < 0) {
    return InvalidArgument(
        "http server: max_header_bytes must be > 0 and max_connections >= 0 (0: automatic)");
  }
  const int n_threads = opts.io_threads;
  auto core = std::make_shared<internal::ServerCore>(std::move(opts), std::move(handler));
  RETURN_IF_ERROR(core->Listen());
  std::unique_ptr<Server> server(new Server(core));
  core->DoAccept();  // no IO thread runs yet, so no strand needed
  try {
    for (int i = 0; i < n_threads; ++i) {
      server->threads_.emplace_back([core] { core->RunIoThread(); });
    }
  } catch (const std::system_error& e) {
    server->Stop();
    return Internal("http server: starting IO threads: {}", e.what());
  }
  return server;
}

int Server::port() const { return core_->port; }

int Server::num_connections() const {
  return core_->num_connections.load(std::memory_order_relaxed);
}

int Server::max_connections() const { return core_->max_connections; }

size_t Server::inflight_body_bytes() const { return core_->body_budget->used(); }

void Server::StopAccepting() { core_->StopAccepting(); }

void Server::Stop() {
  if (stopped_.exchange(true)) return;
  core_->Shutdown();
  if (threads_.empty()) core_->RunIoThread();  // never started: drain the queue here
  for (auto& t : threads_) {
    if (t.get_id() == std::this_thread::get_id()) {
      log::Warn("[http] Server::Stop called on an IO thread; not joining it");
      t.detach();
    } else {
      t.join();
    }
  }
  threads_.clear();
}

}  // namespace brisk::http
