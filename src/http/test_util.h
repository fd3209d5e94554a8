// Test helpers for the HTTP server tests (http_*_test.cc): a blocking raw-socket client with
// deadlines, events, a queue of Responders standing in for an engine, and echo handlers.
#pragma once

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"

namespace brisk::http::test_util {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

// Generous: the machine is shared and noisy.
constexpr auto kWait = 10s;

struct Response {
  int status = 0;
  Headers headers;
  std::string body;
  size_t chunks = 0;  // non-empty chunks seen on the wire
  bool keep_alive = true;

  std::string Header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (beast::iequals(k, name)) return v;
    }
    return "";
  }
};

// Blocking raw-socket client; every read has a deadline so a broken server fails the test
// instead of hanging it.
class Client {
 public:
  // `connect` false: only the socket is made; Connect() later (e.g. once descriptors ran out).
  explicit Client(int port, int rcvbuf = 0, bool connect = true) : port_(port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (connect) Connect();
  }
  bool Connect() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    return connected_;
  }
  ~Client() { Close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Half-close: the server sees EOF, this side can still read.
  bool ShutdownWrite() { return ::shutdown(fd_, SHUT_WR) == 0; }
  // Abortive close: RST instead of FIN.
  void Reset() {
    linger lg{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    Close();
  }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // One response, decoded (chunked included). nullopt on EOF, reset, timeout or bad bytes.
  std::optional<Response> Read(std::chrono::milliseconds timeout = kWait, bool head = false) {
    const auto deadline = Clock::now() + timeout;
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(boost::none);
    p.eager(true);
    if (head) p.skip(true);
    size_t chunks = 0;
    auto on_chunk = [&](uint64_t size, beast::string_view, beast::error_code&) {
      if (size > 0) ++chunks;
    };
    p.on_chunk_header(on_chunk);
    for (;;) {
      if (!buf_.empty()) {
        beast::error_code ec;
        size_t n = p.put(boost::asio::buffer(buf_), ec);
        buf_.erase(0, n);
        if (ec && ec != bhttp::error::need_more) return std::nullopt;
        if (p.is_done()) break;
        if (!ec && n > 0) continue;
      }
      int r = Fill(deadline);
      if (r == 0) {  // EOF ends a body delimited by close
        if (!p.got_some()) return std::nullopt;
        beast::error_code ec;
        p.put_eof(ec);
        if (!ec && p.is_done()) break;
        return std::nullopt;
      }
      if (r < 0) return std::nullopt;
    }
    Response out;
    out.status = static_cast<int>(p.get().result_int());
    for (const auto& f : p.get()) {
      out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    out.body = p.get().body();
    out.chunks = chunks;
    out.keep_alive = p.get().keep_alive();
    return out;
  }

  // The final response: interim 1xx responses before it are skipped.
  std::optional<Response> ReadFinal(std::chrono::milliseconds timeout = kWait) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return std::nullopt;
      auto r = Read(left);
      if (!r || r->status >= 200) return r;
    }
  }

  // Buffers input until it contains `needle` (left unconsumed for Read).
  bool ReadUntilContains(std::string_view needle, std::chrono::milliseconds timeout = kWait) {
    const auto deadline = Clock::now() + timeout;
    while (buf_.find(needle) == std::string::npos) {
      if (Fill(deadline) <= 0) return false;
    }
    return true;
  }

  // True if the server closed the connection (EOF or reset) within `timeout`; discards input.
  bool WaitClosed(std::chrono::milliseconds timeout = kWait) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      int r = Fill(deadline);
      if (r == 0 || r == -1) return true;
      if (r == -2) return false;
      buf_.clear();
    }
  }

 private:
  // >0 bytes appended, 0 EOF, -1 error, -2 timeout.
  int Fill(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return -2;
    pollfd pfd{fd_, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r == 0) return -2;
    if (r < 0) return -1;
    char tmp[16384];
    ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n < 0) return -1;
    if (n == 0) return 0;
    buf_.append(tmp, static_cast<size_t>(n));
    return static_cast<int>(n);
  }

  int port_ = 0;
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

class Event {
 public:
  void Set() {
    std::lock_guard lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool WaitFor(std::chrono::milliseconds timeout = kWait) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// Hands Responders from the handler (IO thread) to the test thread, like an engine queue.
class Pending {
 public:
  void Push(std::shared_ptr<Responder> res) {
    std::lock_guard lock(mu_);
    items_.push_back(std::move(res));
    cv_.notify_all();
  }
  std::shared_ptr<Responder> Pop(std::chrono::milliseconds timeout = kWait) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !items_.empty(); })) return nullptr;
    auto res = std::move(items_.front());
    items_.pop_front();
    return res;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Responder>> items_;
};

inline std::unique_ptr<Server> MustStart(ServerOptions opts, Handler handler) {
  auto server = Server::Start(std::move(opts), std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

// Answers "<method> <path> <body>" with a few request facts echoed as headers.
inline Handler Echo() {
  return [](Request&& req, std::shared_ptr<Responder> res) {
    std::string body = fmt::format("{} {} {}", req.method, req.path, req.body);
    res->Send(200,
              {{"Content-Type", "text/plain"},
               {"X-Remote", req.remote},
               {"X-Target", req.target},
               {"X-Test", std::string(req.Header("x-test"))}},
              std::move(body));
  };
}

// Stops and joins an engine thread on every exit path (a failed ASSERT included).
class EngineThread {
 public:
  template <typename Fn>
  explicit EngineThread(Fn fn) : thread_([this, fn] { fn(stop_); }) {}
  ~EngineThread() { Join(); }
  void Join() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

inline bool WaitUntil(const std::function<bool()>& pred,
                      std::chrono::milliseconds timeout = kWait) {
  const auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// RSS of this process in KiB (VmRSS), 0 if unknown.
inline size_t RssKiB() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  size_t kib = 0;
  while (std::fgets(line, sizeof(line), f)) {
    if (std::sscanf(line, "VmRSS: %zu kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib;
}

}  // namespace brisk::http::test_util
