// The upstream client against the project's own HTTP server: plain and
// streamed responses, keep-alive reuse, idle connections the server closed,
// HEAD, Fetch, concurrency and max_idle. Failures: upstream_client_failure_test.cc.
#include "http/upstream_client.h"

#include <gtest/gtest.h>

#include <future>

#include "http/test_util.h"
#include "http/upstream_client_test_util.h"

namespace brisk::http {
namespace {

using namespace test_util;  // NOLINT: the helpers of upstream_client_test_util.h
using http::test_util::Echo;
using http::test_util::MustStart;
using http::test_util::Pending;
using http::test_util::WaitUntil;

// Hands each request's Responder to the test.
http::Handler Queue(Pending* pending) {
  return [pending](http::Request&&, std::shared_ptr<http::Responder> res) {
    pending->Push(std::move(res));
  };
}

TEST_F(UpstreamClientTest, PlainResponse) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  UpstreamRequest req;
  req.path = "/v1/chat/completions";
  req.headers = {{"X-Test", "yes"}, {"Content-Type", "application/json"}, {"Connection", "close"}};
  req.body = "{\"a\":1}";
  auto r = Send(*client, req);
  ASSERT_TRUE(r->Wait().ok()) << r->Wait().ToString();
  EXPECT_EQ(r->status(), 200);
  EXPECT_EQ(r->body(), "POST /v1/chat/completions {\"a\":1}");
  EXPECT_EQ(r->Header("X-Test"), "yes");
  EXPECT_EQ(r->Header("Content-Type"), "text/plain");
  EXPECT_TRUE(r->well_ordered());
  // The caller's "Connection: close" is this hop's business: the connection stays.
  EXPECT_EQ(client->open_connections(), 1);
  EXPECT_EQ(client->base_url(), fmt::format("http://127.0.0.1:{}", server->port()));
}

TEST_F(UpstreamClientTest, BasePathIsPrepended) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port(), {}, "/team-a/v1");  // a trailing /v1 is dropped
  ASSERT_TRUE(client);
  auto r = Send(*client, Get("/v1/models?x=1"));
  ASSERT_TRUE(r->Wait().ok());
  EXPECT_EQ(r->Header("X-Target"), "/team-a/v1/models?x=1");
}

TEST_F(UpstreamClientTest, StreamedChunksArriveAsSeparatePiecesBeforeTheEnd) {
  Pending pending;
  auto server = MustStart({}, Queue(&pending));
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  auto r = Send(*client, Post("/v1/completions", "{}"));
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  res->StartStream(200, {{"Content-Type", "text/event-stream"}});
  ASSERT_TRUE(r->WaitHead());
  EXPECT_EQ(r->status(), 200);
  EXPECT_EQ(r->Header("Transfer-Encoding"), "chunked");
  EXPECT_TRUE(r->pieces().empty());
  res->Write("data: one\n\n");
  ASSERT_TRUE(r->WaitPieces(1));
  EXPECT_FALSE(r->done());
  res->Write("data: two\n\n");
  ASSERT_TRUE(r->WaitPieces(2));
  EXPECT_FALSE(r->done());
  res->End();
  ASSERT_TRUE(r->Wait().ok()) << r->Wait().ToString();
  EXPECT_EQ(r->pieces(), (std::vector<std::string>{"data: one\n\n", "data: two\n\n"}));
  EXPECT_TRUE(r->well_ordered());
  EXPECT_EQ(client->open_connections(), 1);  // a chunked response keeps the connection
}

// Server-Timing: the engine's stream sends it in its head and again, whole,
// in the trailer; the trailer's fields arrive apart from the head's.
TEST_F(UpstreamClientTest, TrailersArriveBeforeTheEndAndConnectsAreReported) {
  Pending pending;
  auto server = MustStart({}, Queue(&pending));
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  for (const bool reused : {false, true}) {
    auto record = std::make_shared<CallRecord>();
    auto trailers = std::make_shared<std::promise<Headers>>();
    auto connected = std::make_shared<std::vector<bool>>();
    UpstreamCallbacks cb = record->Callbacks(record);
    cb.on_trailers = [trailers](const Headers& t) { trailers->set_value(t); };
    cb.on_connected = [connected](bool r) { connected->push_back(r); };
    auto handle = client->Send(Post("/v1/completions", "{}"), std::move(cb));
    auto res = pending.Pop();
    ASSERT_TRUE(res);
    res->StartStream(200, {{"Server-Timing", "tokenize;dur=1"}, {"Trailer", "Server-Timing"}});
    res->Write("data: one\n\n");
    res->End({{"Server-Timing", "tokenize;dur=1, decode;dur=5, total;dur=6"}, {"X-Extra", "1"}});
    ASSERT_TRUE(record->Wait().ok()) << record->Wait().ToString();
    auto got = trailers->get_future();
    ASSERT_EQ(got.wait_for(kWait), std::future_status::ready);
    EXPECT_EQ(got.get(), (Headers{{"Server-Timing", "tokenize;dur=1, decode;dur=5, total;dur=6"},
                                  {"X-Extra", "1"}}));
    EXPECT_EQ(record->Header("Server-Timing"), "tokenize;dur=1");
    EXPECT_EQ(*connected, std::vector<bool>{reused});
    EXPECT_TRUE(record->well_ordered());
  }
  EXPECT_EQ(server->num_connections(), 1);
}

TEST_F(UpstreamClientTest, KeepAliveReusesOneConnection) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  for (int i = 0; i < 20; ++i) {
    auto r = Send(*client, Get(fmt::format("/n/{}", i)));
    ASSERT_TRUE(r->Wait().ok()) << i << ": " << r->Wait().ToString();
    EXPECT_EQ(r->body(), fmt::format("GET /n/{} ", i));
    EXPECT_EQ(client->open_connections(), 1) << i;
  }
  EXPECT_EQ(server->num_connections(), 1);
}

TEST_F(UpstreamClientTest, ConnectionTheServerClosedWhileIdleIsNotUsed) {
  http::ServerOptions opts;
  opts.idle_timeout = 100ms;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  auto r1 = Send(*client, Get("/1"));
  ASSERT_TRUE(r1->Wait().ok());
  EXPECT_EQ(client->open_connections(), 1);
  ASSERT_TRUE(WaitUntil([&] { return server->num_connections() == 0; }));
  auto r2 = Send(*client, Get("/2"));
  ASSERT_TRUE(r2->Wait().ok()) << r2->Wait().ToString();
  EXPECT_EQ(r2->body(), "GET /2 ");
  EXPECT_EQ(client->open_connections(), 1);  // the dead one was closed, the new one kept
}

TEST_F(UpstreamClientTest, ResponseWithConnectionCloseIsNotKept) {
  auto server = MustStart({}, [](http::Request&&, std::shared_ptr<http::Responder> res) {
    res->Send(200, {{"Connection", "close"}}, "bye");
  });
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  auto r = Send(*client, Get("/"));
  ASSERT_TRUE(r->Wait().ok());
  EXPECT_EQ(r->body(), "bye");
  EXPECT_EQ(client->open_connections(), 0);
}

TEST_F(UpstreamClientTest, HeadRequestHasNoBody) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  auto r = Send(*client, Get("/h"));
  ASSERT_TRUE(r->Wait().ok());
  UpstreamRequest head = Get("/h");
  head.method = "HEAD";
  auto h = Send(*client, head);
  ASSERT_TRUE(h->Wait().ok()) << h->Wait().ToString();
  EXPECT_EQ(h->status(), 200);
  EXPECT_EQ(h->Header("Content-Length"), "8");
  EXPECT_TRUE(h->pieces().empty());
  // The connection is still in step: the next response parses.
  auto g = Send(*client, Get("/g"));
  ASSERT_TRUE(g->Wait().ok());
  EXPECT_EQ(g->body(), "GET /g ");
  EXPECT_EQ(client->open_connections(), 1);
}

TEST_F(UpstreamClientTest, FetchBuffersTheWholeAnswer) {
  auto server = MustStart({}, [](http::Request&& req, std::shared_ptr<http::Responder> res) {
    if (req.path == "/load") {
      res->StartStream(200, {{"Content-Type", "application/json"}});
      res->Write("{\"waiting\":");
      res->Write("3}");
      res->End();
      return;
    }
    res->Send(503, {}, "draining");
  });
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  ASSERT_TRUE(client);
  auto fetch = [&](std::string path) {
    std::promise<Expected<std::pair<int, std::string>>> promise;
    auto future = promise.get_future();
    client->Fetch(Get(std::move(path)), [&promise](Expected<std::pair<int, std::string>> r) {
      promise.set_value(std::move(r));
    });
    EXPECT_EQ(future.wait_for(kWait), std::future_status::ready);
    return future.get();
  };
  auto load = fetch("/load");
  ASSERT_TRUE(load.ok()) << load.status().ToString();
  EXPECT_EQ(load->first, 200);
  EXPECT_EQ(load->second, "{\"waiting\":3}");
  auto health = fetch("/health");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->first, 503);  // an HTTP status is an answer, not an error
  EXPECT_EQ(health->second, "draining");
  EXPECT_EQ(client->open_connections(), 1);
}

TEST_F(UpstreamClientTest, ConcurrentCallsUseTheirOwnConnectionsAndMaxIdleBoundsThePool) {
  // Each Responder comes with its request's path (requests arrive in any order).
  std::mutex mu;
  std::vector<std::pair<std::string, std::shared_ptr<http::Responder>>> held;
  auto server = MustStart({}, [&](http::Request&& req, std::shared_ptr<http::Responder> res) {
    std::lock_guard lock(mu);
    held.emplace_back(req.path, std::move(res));
  });
  ASSERT_TRUE(server);
  UpstreamOptions opts;
  opts.max_idle = 3;
  auto client = MakeClient(server->port(), opts);
  ASSERT_TRUE(client);
  constexpr int kCalls = 8;
  std::vector<std::shared_ptr<CallRecord>> records;
  for (int i = 0; i < kCalls; ++i) records.push_back(Send(*client, Get(fmt::format("/s/{}", i))));
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard lock(mu);
    return held.size() == kCalls;
  }));
  EXPECT_EQ(client->open_connections(), kCalls);
  // Interleave the streams' pieces.
  for (auto& [path, res] : held) res->StartStream(200, {});
  for (int round = 0; round < 3; ++round) {
    for (auto& [path, res] : held) res->Write(fmt::format("{}.{};", path, round));
  }
  for (auto& [path, res] : held) res->End();
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(records[i]->Wait().ok()) << i;
    EXPECT_EQ(records[i]->body(), fmt::format("/s/{0}.0;/s/{0}.1;/s/{0}.2;", i));
    EXPECT_TRUE(records[i]->well_ordered());
  }
  EXPECT_EQ(client->open_connections(), 3);
}

TEST_F(UpstreamClientTest, CreateRejectsBadOptions) {
  auto make = [&](std::string url, int max_idle = 4) {
    UpstreamOptions o;
    o.base_url = std::move(url);
    o.max_idle = max_idle;
    return UpstreamClient::Create(io_.get_executor(), o).status().code();
  };
  EXPECT_EQ(make("https://example.com"), StatusCode::kUnimplemented);
  EXPECT_EQ(make("ftp://example.com"), StatusCode::kInvalidArgument);
  EXPECT_EQ(make("http://:80"), StatusCode::kInvalidArgument);
  EXPECT_EQ(make("http://localhost:70000"), StatusCode::kInvalidArgument);
  EXPECT_EQ(make("http://localhost:8000", -1), StatusCode::kInvalidArgument);
  EXPECT_EQ(make("http://localhost:8000/base"), StatusCode::kOk);
  EXPECT_EQ(make("http://[::1]:8000"), StatusCode::kOk);
}

TEST_F(UpstreamClientTest, HostNameIsResolved) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  UpstreamOptions o;
  o.base_url = fmt::format("http://localhost:{}", server->port());
  auto client = UpstreamClient::Create(io_.get_executor(), o);
  ASSERT_TRUE(client.ok());
  // localhost may resolve to ::1 first; the server listens on 127.0.0.1 only,
  // so this also shows the next address is tried.
  for (int i = 0; i < 2; ++i) {
    auto r = Send(**client, Get("/r"));
    ASSERT_TRUE(r->Wait().ok()) << r->Wait().ToString();
    EXPECT_EQ(r->body(), "GET /r ");
  }
  EXPECT_EQ((*client)->open_connections(), 1);
}

}  // namespace
}  // namespace brisk::http
