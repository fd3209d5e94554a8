// The HTTP server under hostile input: limits on header, body and chunked framing, deadlines,
// malformed and non-conforming requests.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "http/server.h"
#include "http/test_util.h"

namespace brisk::http {
namespace {

using namespace test_util;  // NOLINT: the helpers of http_test_util.h

TEST(HttpLimits, BodyOverLimitIs413) {
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

TEST(HttpLimits, HeaderOverLimitIs431) {
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

TEST(HttpLimits, SlowlorisIsClosedAfterRequestTimeout) {
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

TEST(HttpLimits, IdleKeepAliveIsClosedAfterIdleTimeout) {
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

TEST(HttpLimits, MalformedRequestsAre400AndOthersAreStillServed) {
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

TEST(HttpLimits, UnsupportedFramingIsRejected) {
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

// ---------------------------------------------------------------------------------------------
// Chunked framing: every element bounded, every byte counted.

// Sends `prefix`, then `filler` `repeat` times from a thread (stops at the first failed send).
class Flood {
 public:
  Flood(Client& c, std::string prefix, std::string filler, size_t repeat)
      : thread_([&c, prefix = std::move(prefix), filler = std::move(filler), repeat, this] {
          if (!c.Send(prefix)) return;
          for (size_t i = 0; i < repeat && !stop_.load(); ++i) {
            if (!c.Send(filler)) return;
            sent_ += filler.size();
          }
        }) {}
  ~Flood() { Join(); }
  void Join() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  size_t sent() const { return sent_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<size_t> sent_{0};
  std::thread thread_;
};

constexpr std::string_view kChunkedHead =
    "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";

bool IsLimitStatus(int s) { return s == 400 || s == 413 || s == 431; }

TEST(HttpLimits, HugeChunkExtensionIsRejected) {
  ServerOptions opts;
  opts.request_timeout = 60s;  // the answer must come from the limit, not the deadline
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  // A well-formed chunk with an 8 MB extension, then the chunk and the end.
  Flood flood(c, std::string(kChunkedHead) + "1;x=", std::string(64 << 10, 'a'), 128);
  auto r = c.Read(5s);
  ASSERT_TRUE(r) << "no answer while the extension was still arriving";
  EXPECT_TRUE(IsLimitStatus(r->status)) << r->status;
  EXPECT_FALSE(r->keep_alive);
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpLimits, EndlessChunkLineDoesNotGrowMemory) {
  ServerOptions opts;
  opts.request_timeout = 60s;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  const size_t rss0 = RssKiB();
  Client c(server->port());
  // Up to 256 MiB without a line end; the server must stop it long before.
  Flood flood(c, std::string(kChunkedHead) + "1;x=", std::string(64 << 10, 'z'), 4096);
  auto r = c.Read(5s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_TRUE(c.WaitClosed());
  flood.Join();
  EXPECT_LT(flood.sent(), size_t{64} << 20) << "the server kept reading the line";
  const size_t rss1 = RssKiB();
  EXPECT_LT(rss1, rss0 + (24 << 10)) << "RSS grew from " << rss0 << " to " << rss1 << " KiB";
}

TEST(HttpLimits, ChunkSizeLineOfZerosIsRejected) {
  ServerOptions opts;
  opts.request_timeout = 60s;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send(std::string(kChunkedHead) + std::string(8192, '0')));
  auto r = c.Read(5s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  // A few leading zeros are still fine.
  Client ok(server->port());
  ASSERT_TRUE(ok.Send(std::string(kChunkedHead) + "0005\r\nhello\r\n0\r\n\r\n"));
  r = ok.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "POST /x hello");
}

TEST(HttpLimits, ManyTrailerFieldsAreRejected) {
  ServerOptions opts;
  opts.request_timeout = 60s;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  {  // 100k small, well-formed trailer fields
    Client c(server->port());
    std::string trailers;
    for (int i = 0; i < 100000; ++i) trailers += fmt::format("t{}: v\r\n", i);
    Flood flood(c, std::string(kChunkedHead) + "1\r\na\r\n0\r\n", trailers + "\r\n", 1);
    auto r = c.Read(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 431) << r->body;
  }
  {  // more fields than allowed, each tiny: the count is bounded too
    Client c(server->port());
    std::string trailers;
    for (int i = 0; i < 65; ++i) trailers += "t:\r\n";
    ASSERT_TRUE(c.Send(std::string(kChunkedHead) + "1\r\na\r\n0\r\n" + trailers + "\r\n"));
    auto r = c.Read(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 431) << r->body;
  }
  {  // one endless trailer line
    Client c(server->port());
    Flood flood(c, std::string(kChunkedHead) + "0\r\nX-T: ", std::string(64 << 10, 'x'), 64);
    auto r = c.Read(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 431) << r->body;
  }
}

TEST(HttpLimits, TrailersAreNotMergedIntoHeaders) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send(std::string(kChunkedHead) + "2\r\nhi\r\n0\r\nX-Test: smuggled\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST /x hi");
  EXPECT_EQ(r->Header("X-Test"), "");
}

TEST(HttpLimits, ChunkedFramingCountsTowardTheBodyLimit) {
  ServerOptions opts;
  opts.max_body_bytes = 1024;
  auto server = MustStart(opts, Echo());
  ASSERT_TRUE(server);
  {  // 300 one-byte chunks: 300 bytes of data in 1,800 bytes of body
    Client c(server->port());
    std::string body;
    for (int i = 0; i < 300; ++i) body += "1\r\na\r\n";
    ASSERT_TRUE(c.Send(std::string(kChunkedHead) + body + "0\r\n\r\n"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
  }
  {  // a chunk-size past the limit is refused before its data is sent
    Client c(server->port());
    ASSERT_TRUE(c.Send(std::string(kChunkedHead) + "100000\r\n"));
    auto r = c.Read(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
  }
  {  // within the limit, framing included
    Client c(server->port());
    ASSERT_TRUE(
        c.Send(std::string(kChunkedHead) + "3e8\r\n" + std::string(1000, 'b') + "\r\n0\r\n\r\n"));
    auto r = c.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
}

// ---------------------------------------------------------------------------------------------
// Protocol strictness (finding 9).

TEST(HttpLimits, HostHeaderMustBeThereOnceInHttp11) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  for (std::string bad : {std::string("GET / HTTP/1.1\r\n\r\n"),
                          std::string("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
                          std::string("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n"),
                          std::string("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n")}) {
    Client c(server->port());
    ASSERT_TRUE(c.Send(bad));
    auto r = c.Read();
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_NE(r->body.find("Host"), std::string::npos) << r->body;
    EXPECT_TRUE(c.WaitClosed()) << bad;
  }
  Client old(server->port());  // HTTP/1.0 may leave it out
  ASSERT_TRUE(old.Send("GET /old HTTP/1.0\r\n\r\n"));
  auto r = old.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(HttpLimits, ObsoleteLineFoldingIs400) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  for (std::string bad : {std::string("GET / HTTP/1.1\r\nHost: a\r\nX-Test: one\r\n two\r\n\r\n"),
                          std::string("GET / HTTP/1.1\r\nHost: a\r\nX-Test: one\r\n\ttwo\r\n\r\n"),
                          std::string("GET / HTTP/1.1\r\n Host: a\r\n\r\n")}) {
    Client c(server->port());
    ASSERT_TRUE(c.Send(bad));
    auto r = c.Read();
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_TRUE(c.WaitClosed()) << bad;
  }
}

TEST(HttpLimits, HeaderArrivingByteByByteIsParsedOnce) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  const std::string req = "GET /slow HTTP/1.1\r\nHost: a\r\nX-Test: drip\r\n\r\n";
  for (char ch : req) {
    ASSERT_TRUE(c.Send(std::string_view(&ch, 1)));
    std::this_thread::sleep_for(1ms);
  }
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "GET /slow ");
  EXPECT_EQ(r->Header("X-Test"), "drip");
}

}  // namespace
}  // namespace brisk::http
