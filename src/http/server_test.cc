// The HTTP server: requests, responses, keep-alive, pipelining, errors of the handler.
#include "http/server.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "http/test_util.h"

namespace brisk::http {
namespace {

using namespace test_util;  // NOLINT: the helpers of http_test_util.h

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

}  // namespace
}  // namespace brisk::http
