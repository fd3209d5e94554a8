#include "http/upstream_pool.h"

#include <sys/socket.h>

#include <cerrno>

namespace brisk::http::internal {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

UpstreamConnection::UpstreamConnection(const asio::any_io_executor& executor,
                                       std::shared_ptr<std::atomic<int>> open)
    : socket(executor), open_count(std::move(open)) {
  open_count->fetch_add(1, std::memory_order_relaxed);
}

void UpstreamConnection::Close() {
  if (closed) return;
  closed = true;
  boost::system::error_code ec;
  socket.close(ec);
  open_count->fetch_sub(1, std::memory_order_relaxed);
}

void UpstreamConnection::Abort() {
  boost::system::error_code ec;
  if (!closed) socket.set_option(tcp::socket::linger(true, 0), ec);
  Close();
}

bool UpstreamConnection::LooksAlive() {
  // Nothing may be readable on an idle connection: a peek that would block
  // is the only healthy answer.
  char byte;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

UpstreamPool::UpstreamPool(asio::any_io_executor executor, ServerUrl url, UpstreamOptions options)
    : executor_(std::move(executor)), url_(std::move(url)), options_(std::move(options)) {
  const bool v6 = url_.host.find(':') != std::string::npos;
  host_header_ = fmt::format("{}{}{}:{}", v6 ? "[" : "", url_.host, v6 ? "]" : "", url_.port);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(url_.host, ec);
  numeric_host_ = !ec;
  if (numeric_host_) {
    endpoints_ = std::make_shared<const UpstreamEndpoints>(
        UpstreamEndpoints{tcp::endpoint(address, static_cast<uint16_t>(std::stoi(url_.port)))});
  }
}

std::unique_ptr<UpstreamConnection> UpstreamPool::NewConnection() {
  return std::make_unique<UpstreamConnection>(executor_, open_count_);
}

std::unique_ptr<UpstreamConnection> UpstreamPool::TakeIdle() {
  std::vector<std::unique_ptr<UpstreamConnection>> dead;  // destroyed after the lock is released
  std::lock_guard lock(mu_);
  while (!idle_.empty()) {
    std::unique_ptr<UpstreamConnection> conn = std::move(idle_.back());
    idle_.pop_back();
    if (conn->LooksAlive()) return conn;
    dead.push_back(std::move(conn));
  }
  return nullptr;
}

void UpstreamPool::Release(std::unique_ptr<UpstreamConnection> conn) {
  std::lock_guard lock(mu_);
  if (shut_ || static_cast<int>(idle_.size()) >= options_.max_idle) return;  // closes it
  idle_.push_back(std::move(conn));
}

std::shared_ptr<const UpstreamEndpoints> UpstreamPool::endpoints() {
  std::lock_guard lock(mu_);
  return endpoints_;
}

void UpstreamPool::SetEndpoints(std::shared_ptr<const UpstreamEndpoints> endpoints) {
  std::lock_guard lock(mu_);
  endpoints_ = std::move(endpoints);
}

void UpstreamPool::ForgetResolvedEndpoints() {
  if (numeric_host_) return;
  std::lock_guard lock(mu_);
  endpoints_.reset();
}

void UpstreamPool::Shutdown() {
  std::vector<std::unique_ptr<UpstreamConnection>> idle;  // destroyed after the lock is released
  std::lock_guard lock(mu_);
  shut_ = true;
  idle.swap(idle_);
}

}  // namespace brisk::http::internal
