// Test helpers for upstream_client_*_test.cc: an io_context on two threads,
// a recorder of one call's callbacks that checks their order and that they
// never overlap, and a raw TCP server for byte-exact misbehaviour.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/string.hpp>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "http/test_util.h"
#include "http/upstream_client.h"

namespace brisk::http::test_util {

using namespace std::chrono_literals;
using http::test_util::kWait;

// What one call's callbacks delivered. Shared with the callbacks, so a call
// that outlives a failed test does not touch freed memory.
class CallRecord {
 public:
  UpstreamCallbacks Callbacks(const std::shared_ptr<CallRecord>& self) {
    UpstreamCallbacks cb;
    cb.on_head = [self](int status, const Headers& headers) {
      self->Enter();
      {
        std::lock_guard lock(self->mu_);
        if (self->status_ != 0 || self->done_) self->misordered_ = true;
        self->status_ = status;
        self->headers_ = headers;
      }
      self->Leave();
    };
    cb.on_data = [self](std::string_view data) {
      self->Enter();
      {
        std::lock_guard lock(self->mu_);
        if (self->status_ == 0 || self->done_ || data.empty()) self->misordered_ = true;
        self->pieces_.emplace_back(data);
      }
      self->Leave();
    };
    cb.on_done = [self](const Status& status) {
      self->Enter();
      {
        std::lock_guard lock(self->mu_);
        if (self->done_) self->misordered_ = true;
        ++self->done_calls_;
        self->done_ = status;
      }
      self->Leave();
    };
    return cb;
  }

  // The final status, or INTERNAL "no on_done" after `timeout`.
  Status Wait(std::chrono::milliseconds timeout = kWait) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return done_.has_value(); })) {
      return Status(StatusCode::kInternal, "no on_done within the wait");
    }
    return *done_;
  }
  bool WaitHead(std::chrono::milliseconds timeout = kWait) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return status_ != 0; });
  }
  bool WaitPieces(size_t n, std::chrono::milliseconds timeout = kWait) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pieces_.size() >= n; });
  }

  int status() {
    std::lock_guard lock(mu_);
    return status_;
  }
  std::string Header(std::string_view name) {
    std::lock_guard lock(mu_);
    for (const auto& [k, v] : headers_) {
      if (boost::beast::iequals(k, name)) return v;
    }
    return "";
  }
  std::vector<std::string> pieces() {
    std::lock_guard lock(mu_);
    return pieces_;
  }
  std::string body() {
    std::string out;
    for (const std::string& p : pieces()) out += p;
    return out;
  }
  bool done() {
    std::lock_guard lock(mu_);
    return done_.has_value();
  }
  // Head before data, nothing after on_done, on_done once, no overlap.
  bool well_ordered() {
    std::lock_guard lock(mu_);
    return !misordered_ && !overlapped_ && done_calls_ <= 1;
  }

 private:
  void Enter() {
    if (inside_.fetch_add(1) != 0) overlapped_ = true;
  }
  void Leave() {
    inside_.fetch_sub(1);
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int status_ = 0;
  Headers headers_;
  std::vector<std::string> pieces_;
  std::optional<Status> done_;
  int done_calls_ = 0;
  bool misordered_ = false;
  std::atomic<int> inside_{0};
  std::atomic<bool> overlapped_{false};
};

// Runs the client's io_context on two threads (so a strand matters).
class UpstreamClientTest : public ::testing::Test {
 protected:
  UpstreamClientTest() {
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~UpstreamClientTest() override {
    guard_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
  }

  std::unique_ptr<UpstreamClient> MakeClient(int port, UpstreamOptions options = {},
                                             std::string_view base_path = "") {
    options.base_url = fmt::format("http://127.0.0.1:{}{}", port, base_path);
    auto client = UpstreamClient::Create(io_.get_executor(), std::move(options));
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  // Sends and returns the record; `call` (optional) receives the handle.
  std::shared_ptr<CallRecord> Send(UpstreamClient& client, UpstreamRequest request,
                                   std::shared_ptr<UpstreamCall>* call = nullptr) {
    auto record = std::make_shared<CallRecord>();
    auto handle = client.Send(std::move(request), record->Callbacks(record));
    if (call) *call = std::move(handle);
    return record;
  }

  static UpstreamRequest Get(std::string path) {
    UpstreamRequest r;
    r.method = "GET";
    r.path = std::move(path);
    return r;
  }

  static UpstreamRequest Post(std::string path, std::string body) {
    UpstreamRequest r;
    r.path = std::move(path);
    r.body = std::move(body);
    return r;
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_{
      io_.get_executor()};
  std::vector<std::thread> threads_;
};

// A listening socket whose accepted connections are handed, in order, to a
// script (on the server's thread). The script owns and closes each fd.
class RawServer {
 public:
  using Script = std::function<void(int fd, int index)>;

  explicit RawServer(Script script) : script_(std::move(script)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    socklen_t len = sizeof(addr);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "raw server: cannot listen";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~RawServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
  }

  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }

  // Reads one request head (through the blank line); "" on EOF or timeout.
  static std::string ReadHead(int fd) {
    std::string in;
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (in.find("\r\n\r\n") == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd pfd{fd, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return "";
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return "";
      in.append(buf, static_cast<size_t>(n));
    }
    return in;
  }
  static void WriteAll(int fd, std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  // Abortive close: the peer gets a reset.
  static void Reset(int fd) {
    linger lg{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    ::close(fd);
  }

 private:
  void Run() {
    for (int index = 0; !stop_;) {
      pollfd pfd{listen_fd_, POLLIN, 0};
      if (::poll(&pfd, 1, 20) <= 0) continue;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++accepted_;
      script_(fd, index++);
    }
  }

  Script script_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

}  // namespace brisk::http::test_util
