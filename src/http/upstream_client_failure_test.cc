// How the upstream client fails, and with which kind: kUnavailable before the
// response head (retryable elsewhere), kDataLoss after it, kCancelled on
// Cancel(); the one transparent retry of a stale keep-alive connection.
#include <gtest/gtest.h>

#include <future>

#include "http/test_util.h"
#include "http/upstream_client.h"
#include "http/upstream_client_test_util.h"

namespace brisk::http {
namespace {

using namespace test_util;  // NOLINT: the helpers of upstream_client_test_util.h
using http::test_util::Event;
using http::test_util::MustStart;
using http::test_util::Pending;

http::Handler Queue(Pending* pending) {
  return [pending](http::Request&&, std::shared_ptr<http::Responder> res) {
    pending->Push(std::move(res));
  };
}

// A port nothing listens on (bound once, then released).
int UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool Contains(const Status& s, std::string_view what) {
  return s.message().find(what) != std::string::npos;
}

TEST_F(UpstreamClientTest, ConnectionRefusedIsUnavailable) {
  auto client = MakeClient(UnusedPort());
  ASSERT_TRUE(client);
  auto r = Send(*client, Get("/v1/models"));
  Status s = r->Wait();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(Contains(s, "connect")) << s.ToString();
  EXPECT_EQ(r->status(), 0);  // no head
  EXPECT_TRUE(r->well_ordered());
  EXPECT_EQ(client->open_connections(), 0);
  // Fetch reports it as its error.
  std::promise<Status> fetched;
  client->Fetch(Get("/health"), [&](Expected<std::pair<int, std::string>> got) {
    fetched.set_value(got.status());
  });
  auto future = fetched.get_future();
  ASSERT_EQ(future.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(future.get().code(), StatusCode::kUnavailable);
}

TEST_F(UpstreamClientTest, StaleReusedConnectionIsRetriedOnceOnAFreshOne) {
  // Connection 0 answers one request, then reads the next and closes without
  // a word (as a server whose idle timer fired just then); connection 1 answers.
  RawServer raw([](int fd, int index) {
    if (index == 0) {
      if (!RawServer::ReadHead(fd).empty()) {
        RawServer::WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst");
      }
      RawServer::ReadHead(fd);
      ::close(fd);
      return;
    }
    if (!RawServer::ReadHead(fd).empty()) {
      RawServer::WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nretry");
    }
    ::close(fd);
  });
  auto client = MakeClient(raw.port());
  ASSERT_TRUE(client);
  auto r1 = Send(*client, Get("/1"));
  ASSERT_TRUE(r1->Wait().ok()) << r1->Wait().ToString();
  EXPECT_EQ(r1->body(), "first");
  auto r2 = Send(*client, Post("/2", "{}"));
  ASSERT_TRUE(r2->Wait().ok()) << r2->Wait().ToString();
  EXPECT_EQ(r2->status(), 200);
  EXPECT_EQ(r2->body(), "retry");
  EXPECT_TRUE(r2->well_ordered());
  EXPECT_EQ(raw.accepted(), 2);
}

TEST_F(UpstreamClientTest, FreshConnectionClosedBeforeTheHeadIsUnavailableAndNotRetried) {
  RawServer raw([](int fd, int) {
    RawServer::ReadHead(fd);
    ::close(fd);
  });
  UpstreamOptions opts;
  opts.head_timeout = 60s;  // a retry would wait for this, not end the call at once
  auto client = MakeClient(raw.port(), opts);
  ASSERT_TRUE(client);
  auto r = Send(*client, Get("/x"));
  Status s = r->Wait();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(Contains(s, "response head")) << s.ToString();
  EXPECT_EQ(raw.accepted(), 1);
}

TEST_F(UpstreamClientTest, ResetMidBodyIsDataLoss) {
  Event got_first_bytes;
  RawServer raw([&](int fd, int) {
    RawServer::ReadHead(fd);
    RawServer::WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
    // A reset discards what the peer has not read yet: wait until it has.
    got_first_bytes.WaitFor();
    RawServer::Reset(fd);
  });
  auto client = MakeClient(raw.port());
  ASSERT_TRUE(client);
  auto r = Send(*client, Get("/x"));
  EXPECT_TRUE(r->WaitPieces(1));
  got_first_bytes.Set();
  Status s = r->Wait();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(r->status(), 200);
  EXPECT_EQ(r->body(), "partial");
  EXPECT_TRUE(r->well_ordered());
  EXPECT_EQ(client->open_connections(), 0);
}

TEST_F(UpstreamClientTest, ServerGoingAwayMidStreamIsDataLoss) {
  Pending pending;
  auto server = MustStart({}, Queue(&pending));
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  auto r = Send(*client, Post("/v1/chat/completions", "{}"));
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  res->StartStream(200, {{"Content-Type", "text/event-stream"}});
  res->Write("data: 1\n\n");
  ASSERT_TRUE(r->WaitPieces(1));
  server->Stop();  // closes every connection: the chunked body never ends
  Status s = r->Wait();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(r->body(), "data: 1\n\n");
  EXPECT_TRUE(r->well_ordered());
}

TEST_F(UpstreamClientTest, EndOfFileDelimitedBodyIsComplete) {
  RawServer raw([](int fd, int) {
    RawServer::ReadHead(fd);
    RawServer::WriteAll(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end");
    ::close(fd);
  });
  auto client = MakeClient(raw.port());
  ASSERT_TRUE(client);
  auto r = Send(*client, Get("/x"));
  ASSERT_TRUE(r->Wait().ok()) << r->Wait().ToString();
  EXPECT_EQ(r->body(), "until the end");
  EXPECT_EQ(client->open_connections(), 0);
}

TEST_F(UpstreamClientTest, CancelMidStreamClosesTheConnectionAndTheServerNotices) {
  Pending pending;
  auto server = MustStart({}, Queue(&pending));
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  std::shared_ptr<UpstreamCall> call;
  auto r = Send(*client, Post("/v1/chat/completions", "{}"), &call);
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  Event closed;
  res->OnClose([&closed] { closed.Set(); });
  res->StartStream(200, {});
  res->Write("token ");
  ASSERT_TRUE(r->WaitPieces(1));
  call->Cancel();
  Status s = r->Wait();
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  // The engine side learns it (at once from the reset; a later write at worst).
  bool noticed = false;
  for (int i = 0; i < 200 && !noticed; ++i) {
    noticed = closed.WaitFor(50ms);
    if (!noticed) res->Write("more ");
  }
  EXPECT_TRUE(noticed);
  EXPECT_TRUE(res->closed());
  call->Cancel();  // after on_done: nothing happens
  EXPECT_TRUE(r->well_ordered());
  EXPECT_EQ(r->pieces().size(), 1u);
  EXPECT_TRUE(http::test_util::WaitUntil([&] { return client->open_connections() == 0; }));
}

TEST_F(UpstreamClientTest, CancelBeforeTheHead) {
  Pending pending;
  auto server = MustStart({}, Queue(&pending));
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  std::shared_ptr<UpstreamCall> call;
  auto r = Send(*client, Get("/slow"), &call);
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  call->Cancel();
  EXPECT_EQ(r->Wait().code(), StatusCode::kCancelled);
  EXPECT_EQ(r->status(), 0);
  res->Send(200, {}, "too late");  // a no-op for the server once the client is gone
  EXPECT_TRUE(r->well_ordered());
}

TEST_F(UpstreamClientTest, HeadTimeoutIsUnavailable) {
  Pending pending;  // keeps the Responders: no answer ever comes
  auto server = MustStart({}, Queue(&pending));
  ASSERT_TRUE(server);
  UpstreamOptions opts;
  opts.head_timeout = 200ms;
  auto client = MakeClient(server->port(), opts);
  ASSERT_TRUE(client);
  auto r = Send(*client, Get("/never"));
  Status s = r->Wait();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(Contains(s, "no response head within 200 ms")) << s.ToString();
  EXPECT_EQ(client->open_connections(), 0);
  EXPECT_TRUE(r->well_ordered());
}

TEST_F(UpstreamClientTest, StalledBodyIsDataLoss) {
  Event finished;
  RawServer raw([&](int fd, int) {
    RawServer::ReadHead(fd);
    // The head and a first chunk in one write, then nothing.
    RawServer::WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n");
    finished.WaitFor();
    ::close(fd);
  });
  UpstreamOptions opts;
  opts.idle_timeout = 200ms;
  auto client = MakeClient(raw.port(), opts);
  ASSERT_TRUE(client);
  auto r = Send(*client, Get("/stall"));
  Status s = r->Wait();
  finished.Set();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_TRUE(Contains(s, "stalled for 200 ms")) << s.ToString();
  EXPECT_EQ(r->body(), "first");
  EXPECT_EQ(client->open_connections(), 0);
}

TEST_F(UpstreamClientTest, CallbacksAreReleasedAfterDone) {
  auto server = MustStart({}, http::test_util::Echo());
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  // The caller holds the call and its callbacks hold the caller: a cycle the
  // client breaks by dropping the callbacks after on_done.
  struct Owner {
    std::shared_ptr<UpstreamCall> call;
    Event done;
  };
  auto owner = std::make_shared<Owner>();
  std::weak_ptr<Owner> weak = owner;
  UpstreamCallbacks cb;
  cb.on_head = [owner](int, const Headers&) {};
  cb.on_data = [owner](std::string_view) {};
  cb.on_done = [owner](const Status&) { owner->done.Set(); };
  owner->call = client->Send(Get("/"), std::move(cb));
  ASSERT_TRUE(owner->done.WaitFor());
  owner.reset();
  EXPECT_TRUE(http::test_util::WaitUntil([&] { return weak.expired(); }));
}

}  // namespace
}  // namespace brisk::http
