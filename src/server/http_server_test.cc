#include "server/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace brisk::http {
namespace {

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
  explicit Client(int port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() { Close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
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

std::unique_ptr<Server> MustStart(ServerOptions opts, Handler handler) {
  auto server = Server::Start(std::move(opts), std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

// Answers "<method> <path> <body>" with a few request facts echoed as headers.
Handler Echo() {
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

bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout = kWait) {
  const auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(HttpServer, GetAndPostRoundTrip) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("GET /v1/models?x=1 HTTP/1.1\r\nHost: a\r\nX-Test: yes\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "GET /v1/models ");
  EXPECT_EQ(r->Header("X-Target"), "/v1/models?x=1");
  EXPECT_EQ(r->Header("X-Test"), "yes");
  EXPECT_EQ(r->Header("Server"), "brisk");
  EXPECT_EQ(r->Header("Content-Length"), "15");
  EXPECT_NE(r->Header("Date").find(" GMT"), std::string::npos) << r->Header("Date");
  EXPECT_EQ(r->Header("Content-Type"), "text/plain");

  ASSERT_TRUE(c.Send("POST /v1/chat HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"));
  r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST /v1/chat hello");
}

TEST(HttpServer, KeepAliveServesTwoRequestsOnOneConnection) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto r1 = c.Read();
  ASSERT_TRUE(c.Send("GET /2 HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto r2 = c.Read();
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(r1->body, "GET /1 ");
  EXPECT_EQ(r2->body, "GET /2 ");
  EXPECT_TRUE(r1->keep_alive);
  EXPECT_EQ(r1->Header("X-Remote"), r2->Header("X-Remote"));  // same client port
  EXPECT_EQ(server->num_connections(), 1);
}

TEST(HttpServer, ChunkedRequestBodyIsDecoded) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(
      c.Send("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
             "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "POST /x hello world");
}

TEST(HttpServer, Http10ClosesAfterResponse) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET /old HTTP/1.0\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "GET /old ");
  EXPECT_FALSE(r->keep_alive);
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(
      c.Send("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
             "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
             "GET /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
  auto r1 = c.Read(), r2 = c.Read(), r3 = c.Read();
  ASSERT_TRUE(r1 && r2 && r3);
  EXPECT_EQ(r1->body, "GET /1 ");
  EXPECT_EQ(r2->body, "POST /2 abc");
  EXPECT_EQ(r3->body, "GET /3 ");
  EXPECT_FALSE(r3->keep_alive);
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServer, Expect100ContinueGetsInterimResponse) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(
      c.Send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  auto interim = c.Read();
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(c.Send("hello"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "POST /x hello");
}

TEST(HttpServer, HeadResponseHasNoBody) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("HEAD /h HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto r = c.Read(kWait, /*head=*/true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->Header("Content-Length"), "8");  // "HEAD /h "
  // No body bytes on the wire: the next response parses cleanly.
  ASSERT_TRUE(c.Send("GET /g HTTP/1.1\r\nHost: a\r\n\r\n"));
  r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "GET /g ");
}

TEST(HttpServer, BodyOverLimitIs413) {
  ServerOptions opts;
  opts.max_body_bytes = 1024;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  {
    Client c(server->port());
    ASSERT_TRUE(c.Send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4096\r\n\r\n" +
                       std::string(100, 'a')));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_FALSE(r->keep_alive);
    EXPECT_TRUE(c.WaitClosed());
  }
  {  // chunked: the limit applies to the decoded body
    Client c(server->port());
    std::string chunk = "320\r\n" + std::string(800, 'b') + "\r\n";
    ASSERT_TRUE(c.Send("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk +
                       chunk));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_TRUE(c.WaitClosed());
  }
  {  // at the limit is fine
    Client c(server->port());
    ASSERT_TRUE(c.Send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1024\r\n\r\n" +
                       std::string(1024, 'c')));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
}

TEST(HttpServer, HeaderOverLimitIs431) {
  ServerOptions opts;
  opts.max_header_bytes = 1024;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(4000, 'b') + "\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServer, SlowlorisIsClosedAfterRequestTimeout) {
  ServerOptions opts;
  opts.request_timeout = 200ms;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  Client slow(server->port());
  const auto t0 = Clock::now();
  ASSERT_TRUE(slow.Send("GET / HTTP/1.1\r\nHost: a\r\n"));  // half a header, then nothing
  auto r = slow.Read();
  const auto elapsed = Clock::now() - t0;
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 408);
  EXPECT_TRUE(slow.WaitClosed());
  EXPECT_GE(elapsed, 150ms);
  EXPECT_LT(elapsed, 5s);

  Client ok(server->port());
  ASSERT_TRUE(ok.Send("GET /ok HTTP/1.1\r\nHost: a\r\n\r\n"));
  r = ok.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(HttpServer, IdleKeepAliveIsClosedAfterIdleTimeout) {
  ServerOptions opts;
  opts.idle_timeout = 200ms;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  ASSERT_TRUE(c.Read());
  EXPECT_TRUE(c.WaitClosed(5s));
  EXPECT_TRUE(WaitUntil([&] { return server->num_connections() == 0; }));
}

TEST(HttpServer, MalformedRequestsAre400AndOthersAreStillServed) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  for (std::string bad : {std::string("NOT A REQUEST\r\n\r\n"), std::string("GET /\r\n\r\n"),
                          std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"),
                          std::string("GET / HTTP/1.1\r\nBad Header\r\n\r\n"),
                          std::string("POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n")}) {
    Client c(server->port());
    ASSERT_TRUE(c.Send(bad));
    auto r = c.Read();
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_TRUE(c.WaitClosed()) << bad;
  }
  Client ok(server->port());
  ASSERT_TRUE(ok.Send("GET /ok HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto r = ok.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(HttpServer, UnsupportedFramingIsRejected) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  {
    Client c(server->port());
    ASSERT_TRUE(c.Send("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\nabc"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 501);
    EXPECT_TRUE(c.WaitClosed());
  }
  {
    Client c(server->port());
    ASSERT_TRUE(c.Send(
        "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
        "abc"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
  }
  {
    Client c(server->port());
    ASSERT_TRUE(c.Send("GET / HTTP/2.0\r\nHost: a\r\n\r\n"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->status == 505 || r->status == 400) << r->status;
  }
}

TEST(HttpServer, StreamOf100ChunksFromAnotherThreadArrivesInOrder) {
  Pending pending;
  ServerOptions opts;
  opts.io_threads = 2;
  auto server = MustStart(opts, [&](Request&& req, std::shared_ptr<Responder> res) {
    if (req.path != "/stream") return Echo()(std::move(req), std::move(res));
    res->StartStream(200, {{"Content-Type", "text/event-stream"}});
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET /stream HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  std::string expected;
  for (int i = 0; i < 100; ++i) expected += fmt::format("data: {}\n\n", i);
  std::thread engine([res] {
    for (int i = 0; i < 100; ++i) res->Write(fmt::format("data: {}\n\n", i));
    res->Write("");  // empty writes are skipped, not a premature last chunk
    res->End();
  });
  auto r = c.Read();
  engine.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("Transfer-Encoding"), "chunked");
  EXPECT_EQ(r->Header("Cache-Control"), "no-cache");
  EXPECT_EQ(r->Header("Content-Type"), "text/event-stream");
  EXPECT_EQ(r->chunks, 100u);
  EXPECT_EQ(r->body, expected);
  EXPECT_FALSE(res->closed());

  // The connection is reusable after the stream.
  ASSERT_TRUE(c.Send("GET /after HTTP/1.1\r\nHost: a\r\n\r\n"));
  r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "GET /after ");
}

TEST(HttpServer, ClientClosingMidStreamFiresOnClose) {
  Pending pending;
  Event closed;
  auto server = MustStart({}, [&](Request&&, std::shared_ptr<Responder> res) {
    res->OnClose([&] { closed.Set(); });
    res->StartStream(200, {});
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  auto c = std::make_unique<Client>(server->port());
  ASSERT_TRUE(c->Send("POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"));
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  EngineThread engine([&](std::atomic<bool>& stop) {
    while (!stop.load()) {
      res->Write("tok ");
      std::this_thread::sleep_for(2ms);
    }
  });
  ASSERT_TRUE(c->ReadUntilContains("tok "));
  const auto t0 = Clock::now();
  c.reset();  // client goes away
  EXPECT_TRUE(closed.WaitFor());
  EXPECT_LT(Clock::now() - t0, 5s);
  EXPECT_TRUE(res->closed());
  std::this_thread::sleep_for(20ms);  // the engine keeps writing into a closed stream
  engine.Join();
  res->Write("late");
  res->End();
  res->Send(200, {}, "late");
  bool late_fired = false;
  res->OnClose([&] { late_fired = true; });
  EXPECT_TRUE(late_fired);  // already closed: runs at once
  EXPECT_TRUE(WaitUntil([&] { return server->num_connections() == 0; }));
}

TEST(HttpServer, ClientClosingWhileResponsePendingFiresOnClose) {
  Pending pending;
  Event closed;
  auto server = MustStart({}, [&](Request&&, std::shared_ptr<Responder> res) {
    res->OnClose([&] { closed.Set(); });
    pending.Push(std::move(res));  // a queued request: no bytes written yet
  });
  ASSERT_TRUE(server);
  auto c = std::make_unique<Client>(server->port());
  ASSERT_TRUE(c->Send("POST /v1/chat HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"));
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  EXPECT_FALSE(res->closed());
  c.reset();
  EXPECT_TRUE(closed.WaitFor());
  EXPECT_TRUE(res->closed());
  res->Send(200, {}, "too late");  // harmless
}

TEST(HttpServer, CompletedResponseNeverFiresOnClose) {
  std::atomic<int> fired{0};
  auto server = MustStart({}, [&](Request&&, std::shared_ptr<Responder> res) {
    res->OnClose([&] { fired++; });
    res->Send(200, {}, "ok");
  });
  ASSERT_TRUE(server);
  {
    Client c(server->port());
    ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    ASSERT_TRUE(c.Read());
  }
  EXPECT_TRUE(WaitUntil([&] { return server->num_connections() == 0; }));
  EXPECT_EQ(fired.load(), 0);
}

// Many streams fed by one engine thread while half the clients hang up at different times:
// the closed ones see OnClose, the others get every byte (and ASan sees no use-after-free).
TEST(HttpServer, ManyStreamsWithClientsHangingUp) {
  constexpr int kStreams = 64;
  constexpr int kTokens = 200;
  Pending pending;
  std::atomic<int> on_close{0};
  ServerOptions opts;
  opts.io_threads = 2;
  auto server = MustStart(opts, [&](Request&&, std::shared_ptr<Responder> res) {
    res->OnClose([&] { on_close++; });
    res->StartStream(200, {});
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::shared_ptr<Responder>> streams;
  for (int i = 0; i < kStreams; ++i) {
    clients.push_back(std::make_unique<Client>(server->port()));
    ASSERT_TRUE(clients.back()->Send("GET /s HTTP/1.1\r\nHost: a\r\n\r\n"));
    streams.push_back(pending.Pop());  // stream i belongs to client i
    ASSERT_TRUE(streams.back());
  }
  std::string expected;
  for (int t = 0; t < kTokens; ++t) expected += fmt::format("{} ", t);
  EngineThread engine([&](std::atomic<bool>&) {
    for (int t = 0; t < kTokens; ++t) {
      for (auto& res : streams) res->Write(fmt::format("{} ", t));
      if (t % 20 == 0) std::this_thread::sleep_for(1ms);
    }
    for (auto& res : streams) res->End();
  });
  for (int i = 0; i < kStreams; i += 2) {  // odd clients stay, even ones leave
    clients[i].reset();
    std::this_thread::sleep_for(1ms);
  }
  for (int i = 1; i < kStreams; i += 2) {
    auto r = clients[i]->Read();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->body, expected) << i;
  }
  engine.Join();
  // A client that left after its stream completed sees no OnClose, so at most kStreams / 2.
  EXPECT_LE(on_close.load(), kStreams / 2);
  for (int i = 1; i < kStreams; i += 2) EXPECT_FALSE(streams[i]->closed()) << i;
  clients.clear();
  EXPECT_TRUE(WaitUntil([&] { return server->num_connections() == 0; }));
}

TEST(HttpServer, HoldsThousandIdleConnectionsWhileServingAnother) {
  constexpr int kConns = 1000;
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  const rlim_t want = 2 * kConns + 256;  // client and server ends live in this process
  if (rl.rlim_cur < want) {
    rl.rlim_cur = std::min<rlim_t>(want, rl.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur < want) GTEST_SKIP() << "RLIMIT_NOFILE hard limit " << rl.rlim_max;

  ServerOptions opts;
  opts.io_threads = 2;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  std::vector<std::unique_ptr<Client>> clients;
  clients.reserve(kConns);
  for (int i = 0; i < kConns; ++i) {
    clients.push_back(std::make_unique<Client>(server->port()));
    ASSERT_TRUE(clients.back()->connected()) << i;
    ASSERT_TRUE(clients.back()->Send("GET /idle HTTP/1.1\r\nHost: a\r\n\r\n")) << i;
  }
  for (int i = 0; i < kConns; ++i) {
    auto r = clients[i]->Read();
    ASSERT_TRUE(r) << i;
    ASSERT_EQ(r->status, 200) << i;
  }
  EXPECT_EQ(server->num_connections(), kConns);

  Client other(server->port());
  ASSERT_TRUE(other.Send("GET /busy HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto r = other.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "GET /busy ");
  // The idle ones are still alive and usable.
  for (int i : {0, kConns / 2, kConns - 1}) {
    ASSERT_TRUE(clients[i]->Send("GET /again HTTP/1.1\r\nHost: a\r\n\r\n"));
    r = clients[i]->Read();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->body, "GET /again ");
  }
  clients.clear();
  EXPECT_TRUE(WaitUntil([&] { return server->num_connections() <= 1; }));
}

TEST(HttpServer, MaxConnectionsRejectsTheExtraOne) {
  ServerOptions opts;
  opts.max_connections = 2;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  auto a = std::make_unique<Client>(server->port());
  Client b(server->port());
  for (Client* c : {a.get(), &b}) {
    ASSERT_TRUE(c->Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    ASSERT_TRUE(c->Read());
  }
  Client extra(server->port());
  extra.Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  auto r = extra.Read();
  EXPECT_TRUE(!r || r->status == 503);
  EXPECT_TRUE(extra.WaitClosed());

  a.reset();
  ASSERT_TRUE(WaitUntil([&] { return server->num_connections() <= 1; }));
  Client d(server->port());
  ASSERT_TRUE(d.Send("GET /d HTTP/1.1\r\nHost: a\r\n\r\n"));
  r = d.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(HttpServer, StopAcceptingLetsInFlightStreamFinish) {
  Pending pending;
  ServerOptions opts;
  opts.io_threads = 2;
  auto server = MustStart(opts, [&](Request&& req, std::shared_ptr<Responder> res) {
    if (req.path != "/stream") return Echo()(std::move(req), std::move(res));
    res->StartStream(200, {{"Content-Type", "text/plain"}});
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  Client idle(server->port());
  ASSERT_TRUE(idle.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n"));
  ASSERT_TRUE(idle.Read());

  Client streamer(server->port());
  ASSERT_TRUE(streamer.Send("GET /stream HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  res->Write("first\n");
  ASSERT_TRUE(streamer.ReadUntilContains("first\n"));

  server->StopAccepting();
  EXPECT_TRUE(idle.WaitClosed());
  {
    Client late(server->port());
    if (late.connected()) {  // refused is expected; a connect racing the close gets no answer
      late.Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
      EXPECT_FALSE(late.Read(2s));
    }
  }
  std::thread engine([res] {
    res->Write("second\n");
    res->Write("third\n");
    res->End();
  });
  auto r = streamer.Read();
  engine.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "first\nsecond\nthird\n");
  EXPECT_FALSE(res->closed());
  EXPECT_TRUE(streamer.WaitClosed());  // closes after its response
  EXPECT_TRUE(WaitUntil([&] { return server->num_connections() == 0; }));
}

TEST(HttpServer, SlowStreamConsumerIsDisconnected) {
  Pending pending;
  Event closed;
  ServerOptions opts;
  opts.max_write_queue_bytes = 256 << 10;
  auto server = MustStart(opts, [&](Request&&, std::shared_ptr<Responder> res) {
    res->OnClose([&] { closed.Set(); });
    res->StartStream(200, {});
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  Client c(server->port(), /*rcvbuf=*/4096);
  ASSERT_TRUE(c.Send("GET /s HTTP/1.1\r\nHost: a\r\n\r\n"));  // and never read
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  const std::string chunk(64 << 10, 'x');
  const auto deadline = Clock::now() + kWait;
  while (!res->closed() && Clock::now() < deadline) {
    if (res->queued_bytes() > (1 << 20)) {
      std::this_thread::sleep_for(1ms);
      continue;
    }
    res->Write(chunk);
  }
  EXPECT_TRUE(closed.WaitFor());
  EXPECT_TRUE(res->closed());
}

TEST(HttpServer, HandlerExceptionIs500) {
  auto server = MustStart(
      {}, [](Request&&, std::shared_ptr<Responder>) { throw std::runtime_error("boom"); });
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));  // still serving
  r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
}

TEST(HttpServer, DroppedResponderIs500) {
  auto server = MustStart({}, [](Request&&, std::shared_ptr<Responder>) {});
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
}

TEST(HttpServer, PortInUseIsAnError) {
  auto first = MustStart({}, Echo());
  ASSERT_TRUE(first);
  ServerOptions opts;
  opts.port = first->port();
  auto second = Server::Start(opts, Echo());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(std::to_string(first->port())), std::string::npos);

  opts.port = 0;
  opts.host = "not a host name";
  EXPECT_FALSE(Server::Start(opts, Echo()).ok());
}

TEST(HttpServer, ResponderOutlivesServer) {
  Pending pending;
  Event closed;
  ServerOptions opts;
  opts.io_threads = 2;
  auto server = MustStart(opts, [&](Request&&, std::shared_ptr<Responder> res) {
    res->OnClose([&] { closed.Set(); });
    res->StartStream(200, {});
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  EngineThread engine([&](std::atomic<bool>& stop) {  // writes straight through the shutdown
    while (!stop.load()) {
      res->Write("tok");
      std::this_thread::yield();
    }
    for (int i = 0; i < 50; ++i) res->Write("after");
    res->End();
  });
  std::this_thread::sleep_for(20ms);
  server->Stop();
  EXPECT_TRUE(closed.WaitFor());
  server.reset();
  engine.Join();
  EXPECT_TRUE(res->closed());
  res->Send(200, {}, "x");
  bool late = false;
  res->OnClose([&] { late = true; });
  EXPECT_TRUE(late);
  EXPECT_TRUE(c.WaitClosed());
  res.reset();  // last reference: connection and server core go now
}

}  // namespace
}  // namespace brisk::http
