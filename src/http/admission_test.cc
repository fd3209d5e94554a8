// What the HTTP server admits: the on_headers hook, the body budget, the Host allow-list, and
// connections (caps, the file limit, a thousand idle ones).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <mutex>
#include <stdexcept>
#include <vector>

#include "http/connection.h"
#include "http/server.h"
#include "http/test_util.h"

namespace brisk::http {
namespace {

using namespace test_util;  // NOLINT: the helpers of http_test_util.h

TEST(HttpAdmission, HoldsThousandIdleConnectionsWhileServingAnother) {
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

TEST(HttpAdmission, MaxConnectionsRejectsTheExtraOne) {
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

// ---------------------------------------------------------------------------------------------
// The on_headers hook: answers before the body is read.

Handler CountingEcho(std::atomic<int>& calls) {
  return [&calls](Request&& req, std::shared_ptr<Responder> res) {
    ++calls;
    Echo()(std::move(req), std::move(res));
  };
}

TEST(HttpAdmission, OnHeadersAnswersBeforeTheBodyIsRead) {
  std::atomic<int> calls{0};
  std::mutex mu;
  std::vector<Request> heads;
  ServerOptions opts;
  opts.on_headers = [&](const Request& head) -> std::optional<EarlyResponse> {
    {
      std::lock_guard lock(mu);
      heads.push_back(head);
    }
    if (head.Header("Authorization") == "Bearer good") return std::nullopt;
    return EarlyResponse{401,
                         {{"Content-Type", "application/json"}, {"X-Why", "key"}},
                         R"({"error":{"message":"no key"}})"};
  };
  auto server = MustStart(opts, CountingEcho(calls));
  ASSERT_TRUE(server);
  {  // A 3 MB body announced, not one byte of it sent: the answer comes anyway.
    Client c(server->port());
    ASSERT_TRUE(
        c.Send("POST /v1/chat/completions?q=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3000000\r\n"
               "Expect: 100-continue\r\n\r\n"));
    auto r = c.Read(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);  // no "100 Continue" first
    EXPECT_EQ(r->Header("X-Why"), "key");
    EXPECT_EQ(r->body, R"({"error":{"message":"no key"}})");
    EXPECT_FALSE(r->keep_alive);
    EXPECT_TRUE(c.WaitClosed());
  }
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(server->inflight_body_bytes(), 0u);
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(heads.size(), 1u);
    EXPECT_EQ(heads[0].method, "POST");
    EXPECT_EQ(heads[0].path, "/v1/chat/completions");
    EXPECT_EQ(heads[0].target, "/v1/chat/completions?q=1");
    EXPECT_EQ(heads[0].Header("content-length"), "3000000");
    EXPECT_TRUE(heads[0].body.empty());
    EXPECT_FALSE(heads[0].remote.empty());
  }
  {  // Let through: the handler gets the body as usual.
    Client c(server->port());
    ASSERT_TRUE(
        c.Send("POST /p HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer good\r\nContent-Length: "
               "3\r\n\r\nabc"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "POST /p abc");
  }
  EXPECT_EQ(calls.load(), 1);
}

TEST(HttpAdmission, OnHeadersThatThrowsIs500) {
  ServerOptions opts;
  opts.on_headers = [](const Request&) -> std::optional<EarlyResponse> {
    throw std::runtime_error("hook");
  };
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
}

// ---------------------------------------------------------------------------------------------
// The budget of body bytes in flight (finding 4).

TEST(HttpAdmission, BodyBudgetRefusesWhatDoesNotFit) {
  ServerOptions opts;
  opts.max_body_bytes = 256 << 10;
  opts.max_inflight_body_bytes = 512 << 10;
  std::mutex mu;
  std::vector<Request> kept;
  auto server = MustStart(opts, [&](Request&& req, std::shared_ptr<Responder> res) {
    if (req.path == "/keep") {
      std::lock_guard lock(mu);
      kept.push_back(std::move(req));
    }
    res->Send(200, {}, "ok");
  });
  ASSERT_TRUE(server);
  const std::string head224k =
      "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: " + std::to_string(224 << 10) +
      "\r\n\r\n";
  // Two stalled uploads of 224 KiB fill the share of large bodies (all but the last eighth,
  // kept for small ones) before a byte of their bodies arrived.
  Client a(server->port()), b(server->port());
  ASSERT_TRUE(a.Send(head224k + "x"));
  ASSERT_TRUE(b.Send(head224k));
  ASSERT_TRUE(WaitUntil([&] { return server->inflight_body_bytes() == (448u << 10); }));
  {
    Client c(server->port());
    ASSERT_TRUE(c.Send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: " +
                       std::to_string(100 << 10) + "\r\n\r\n"));
    auto r = c.Read(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    EXPECT_EQ(r->Header("Retry-After"), "1");
    EXPECT_TRUE(c.WaitClosed());
  }
  {  // a small body still gets in: the reserve
    Client c(server->port());
    ASSERT_TRUE(c.Send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789"));
    auto r = c.Read(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  {  // chunked: refused as the buffer grows past a small body
    Client c(server->port());
    ASSERT_TRUE(
        c.Send("POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
               "11800\r\n" +
               std::string(0x11800, 'c') + "\r\n"));
    auto r = c.Read(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
  }
  {  // bodiless requests need no budget
    Client c(server->port());
    ASSERT_TRUE(c.Send("GET /health HTTP/1.1\r\nHost: a\r\n\r\n"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  // A stalled upload that goes away gives its share back.
  a.Close();
  ASSERT_TRUE(WaitUntil([&] { return server->inflight_body_bytes() == (224u << 10); }));
  // A body handed to the handler stays counted while the handler holds the Request.
  Client k(server->port());
  ASSERT_TRUE(k.Send("POST /keep HTTP/1.1\r\nHost: a\r\nContent-Length: " +
                     std::to_string(200 << 10) + "\r\n\r\n" + std::string(200 << 10, 'k')));
  auto r = k.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(server->inflight_body_bytes(), (424u << 10));
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].body.size(), 200u << 10);
    Request copy = kept[0];  // copies share the lease
    kept.clear();
    EXPECT_EQ(server->inflight_body_bytes(), (424u << 10));
    copy.ReleaseBody();
  }
  EXPECT_EQ(server->inflight_body_bytes(), (224u << 10));
  b.Close();
  EXPECT_TRUE(WaitUntil([&] { return server->inflight_body_bytes() == 0; }));
}

TEST(HttpAdmission, BodyBudgetIsAtLeastOneLargestBody) {
  ServerOptions opts;
  opts.max_body_bytes = 64 << 10;
  opts.max_inflight_body_bytes = 1;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: " + std::to_string(64 << 10) +
                     "\r\n\r\n" + std::string(64 << 10, 'x')));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// ---------------------------------------------------------------------------------------------
// Host allow-list against DNS rebinding (finding 5).

TEST(HttpAdmission, AllowedHostsRefuseOtherNames) {
  ServerOptions opts;
  opts.allowed_hosts = {"localhost", "127.0.0.1", "[::1]"};
  std::atomic<int> calls{0};
  auto server = MustStart(opts, CountingEcho(calls));
  ASSERT_TRUE(server);
  for (std::string host : {"evil.example", "evil.example:80", "localhost.evil.example", "127.0.0.2",
                           "[::2]:8000", "local host", "localhost:x"}) {
    Client c(server->port());
    ASSERT_TRUE(c.Send("POST /v1/completions HTTP/1.1\r\nHost: " + host +
                       "\r\nContent-Length: 100000\r\n\r\n"));
    auto r = c.Read(5s);
    ASSERT_TRUE(r) << host;
    EXPECT_TRUE(r->status == 421 || r->status == 400) << host << " " << r->status;
    EXPECT_NE(r->body.find("\"error\""), std::string::npos) << r->body;
    EXPECT_TRUE(c.WaitClosed()) << host;
  }
  EXPECT_EQ(calls.load(), 0);
  for (std::string host :
       {"localhost", "LocalHost:8000", "localhost.", "127.0.0.1:1", "[::1]", "[::1]:8000"}) {
    Client c(server->port());
    ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n"));
    auto r = c.Read();
    ASSERT_TRUE(r) << host;
    EXPECT_EQ(r->status, 200) << host;
  }
}

// ---------------------------------------------------------------------------------------------
// Connections and the file limit (finding 7).

// Lowers RLIMIT_NOFILE's soft limit for one scope.
class FileLimit {
 public:
  explicit FileLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit rl = saved_;
    rl.rlim_cur = std::min(soft, saved_.rlim_max);
    ok_ = ::setrlimit(RLIMIT_NOFILE, &rl) == 0;
  }
  ~FileLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

TEST(HttpAdmission, ConnectionCapFollowsTheFileLimit) {
  using internal::ConnectionCap;
  EXPECT_EQ(ConnectionCap(0, 1024), 1024 - 64 - 64);
  EXPECT_EQ(ConnectionCap(10000, 1024), 1024 - 128);
  EXPECT_EQ(ConnectionCap(100, 1024), 100);
  EXPECT_EQ(ConnectionCap(10000, 128), 128 - 64 - 8);
  EXPECT_EQ(ConnectionCap(10000, 32), 1);
  EXPECT_EQ(ConnectionCap(10000, UINT64_MAX), 10000);

  FileLimit limit(256);
  ASSERT_TRUE(limit.ok());
  ServerOptions opts;
  opts.max_connections = 10000;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  EXPECT_EQ(server->max_connections(), 256 - 64 - 16);
}

// Accept failing with EMFILE still answers 503 (a spare descriptor is given up for it)
// instead of leaving the client in the backlog.
TEST(HttpAdmission, OutOfDescriptorsIsAnswered503) {
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizer runtime opens a pipe to check that memory is readable (UBSan's
  // vptr check does this on a type-cache miss); with every descriptor taken it
  // cannot, and reports a valid object as having an invalid vptr. This test
  // runs in the normal build.
  GTEST_SKIP() << "descriptor exhaustion breaks the sanitizer runtime's own checks";
#endif
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client ok(server->port());
  ASSERT_TRUE(ok.Send("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"));
  ASSERT_TRUE(ok.Read());

  std::vector<int> filler;
  std::optional<Response> r;
  {
    // Few enough descriptors to fill them all quickly: those open now plus some.
    size_t open_now = 0;
    for (int fd = 0; fd < 65536; ++fd) open_now = ::fcntl(fd, F_GETFD) >= 0 ? fd + 1 : open_now;
    FileLimit limit(open_now + 64);
    ASSERT_TRUE(limit.ok());
    Client late(server->port(), 0, /*connect=*/false);
    for (;;) {  // take every descriptor left
      int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      filler.push_back(fd);
    }
    ASSERT_TRUE(late.Connect());  // the kernel accepts it into the backlog
    late.Send("GET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
    r = late.Read(5s);
    for (int fd : filler) ::close(fd);
  }
  ASSERT_TRUE(r) << "the client was left hanging";
  EXPECT_EQ(r->status, 503);
  // Descriptors are back: normal service.
  Client again(server->port());
  ASSERT_TRUE(again.Send("GET /3 HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto r3 = again.Read();
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->status, 200);
}

}  // namespace
}  // namespace brisk::http
