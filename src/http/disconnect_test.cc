// The HTTP server when clients go away, half-close or read slowly: streams, OnClose, draining.
#include <gtest/gtest.h>

#include <thread>

#include "http/server.h"
#include "http/test_util.h"

namespace brisk::http {
namespace {

using namespace test_util;  // NOLINT: the helpers of http_test_util.h

TEST(HttpDisconnect, StreamOf100ChunksFromAnotherThreadArrivesInOrder) {
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

TEST(HttpDisconnect, ClientClosingMidStreamFiresOnClose) {
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

TEST(HttpDisconnect, ClientClosingWhileResponsePendingFiresOnClose) {
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

TEST(HttpDisconnect, CompletedResponseNeverFiresOnClose) {
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
TEST(HttpDisconnect, ManyStreamsWithClientsHangingUp) {
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

TEST(HttpDisconnect, StopAcceptingLetsInFlightStreamFinish) {
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

TEST(HttpDisconnect, SlowStreamConsumerIsDisconnected) {
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

TEST(HttpDisconnect, ResponderOutlivesServer) {
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

// ---------------------------------------------------------------------------------------------
// Half-close: EOF after a complete request is not a cancel.

TEST(HttpDisconnect, HalfClosedClientGetsItsResponse) {
  Pending pending;
  std::atomic<int> fired{0};
  auto server = MustStart({}, [&](Request&&, std::shared_ptr<Responder> res) {
    res->OnClose([&] { fired++; });
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("POST /v1/chat HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"));
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  ASSERT_TRUE(c.ShutdownWrite());
  std::this_thread::sleep_for(300ms);  // the server has seen the EOF by now
  EXPECT_FALSE(res->closed());
  EXPECT_EQ(fired.load(), 0);
  res->Send(200, {{"Content-Type", "text/plain"}}, "answer");
  auto r = c.ReadFinal();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "answer");
  EXPECT_TRUE(c.WaitClosed());  // nothing more can come from the client
  EXPECT_EQ(fired.load(), 0);
  EXPECT_TRUE(WaitUntil([&] { return server->num_connections() == 0; }));
}

TEST(HttpDisconnect, HalfClosedClientGetsItsStream) {
  Pending pending;
  auto server = MustStart({}, [&](Request&&, std::shared_ptr<Responder> res) {
    res->StartStream(200, {});
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET /s HTTP/1.1\r\nHost: a\r\n\r\n"));
  ASSERT_TRUE(c.ShutdownWrite());
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  std::this_thread::sleep_for(200ms);
  for (int i = 0; i < 5; ++i) res->Write(fmt::format("t{} ", i));
  res->End();
  auto r = c.ReadFinal();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "t0 t1 t2 t3 t4 ");
  EXPECT_FALSE(res->closed());
}

TEST(HttpDisconnect, HalfCloseServesPipelinedRequestsFirst) {
  auto server = MustStart({}, Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"));
  ASSERT_TRUE(c.ShutdownWrite());
  auto r1 = c.ReadFinal(), r2 = c.ReadFinal();
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(r1->body, "GET /1 ");
  EXPECT_EQ(r2->body, "GET /2 ");
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpDisconnect, HalfCloseInsideARequestDropsIt) {
  std::atomic<int> calls{0};
  auto server = MustStart({}, [&](Request&& req, std::shared_ptr<Responder> res) {
    ++calls;
    Echo()(std::move(req), std::move(res));
  });
  ASSERT_TRUE(server);
  for (std::string partial : {std::string("GET / HTTP/1.1\r\nHost: a\r\n"),
                              std::string("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n"
                                          "abc")}) {
    Client c(server->port());
    ASSERT_TRUE(c.Send(partial));
    ASSERT_TRUE(c.ShutdownWrite());
    EXPECT_TRUE(c.WaitClosed(5s));
  }
  EXPECT_EQ(calls.load(), 0);
  EXPECT_TRUE(WaitUntil([&] { return server->num_connections() == 0; }));
}

TEST(HttpDisconnect, ResetWhileResponsePendingFiresOnClose) {
  Pending pending;
  Event closed;
  auto server = MustStart({}, [&](Request&&, std::shared_ptr<Responder> res) {
    res->OnClose([&] { closed.Set(); });
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  c.Reset();
  EXPECT_TRUE(closed.WaitFor(5s));
  EXPECT_TRUE(res->closed());
}

// ---------------------------------------------------------------------------------------------
// Disconnects noticed while reading is paused behind pipelined bytes (finding 6).

TEST(HttpDisconnect, CloseBehindPipelinedBytesFiresOnClose) {
  Pending pending;
  Event closed;
  auto server = MustStart({}, [&](Request&&, std::shared_ptr<Responder> res) {
    res->OnClose([&] { closed.Set(); });
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  auto c = std::make_unique<Client>(server->port());
  ASSERT_TRUE(c->Send("POST /v1/chat HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}" +
                      std::string(70 << 10, 'j')));  // 70 KiB of pipelined junk
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  std::this_thread::sleep_for(100ms);  // the server reads 64 KiB of it and pauses
  c.reset();                           // then the client goes away (FIN)
  const auto t0 = Clock::now();
  EXPECT_TRUE(closed.WaitFor(5s)) << "the close was not noticed";
  EXPECT_LT(Clock::now() - t0, 2s);
  EXPECT_TRUE(res->closed());
}

TEST(HttpDisconnect, HalfCloseBehindPipelinedBytesIsServed) {
  Pending pending;
  std::atomic<int> fired{0};
  auto server = MustStart({}, [&](Request&& req, std::shared_ptr<Responder> res) {
    if (req.path != "/hold") return Echo()(std::move(req), std::move(res));
    res->OnClose([&] { fired++; });
    pending.Push(std::move(res));
  });
  ASSERT_TRUE(server);
  Client c(server->port());
  const std::string big(100 << 10, 'b');
  ASSERT_TRUE(
      c.Send("GET /hold HTTP/1.1\r\nHost: a\r\n\r\nPOST /next HTTP/1.1\r\nHost: a\r\n"
             "Content-Length: " +
             std::to_string(big.size()) + "\r\n\r\n" + big));
  ASSERT_TRUE(c.ShutdownWrite());
  auto res = pending.Pop();
  ASSERT_TRUE(res);
  std::this_thread::sleep_for(400ms);  // several polls of the paused socket
  EXPECT_EQ(fired.load(), 0);
  EXPECT_FALSE(res->closed());
  res->Send(200, {}, "held");
  auto r1 = c.ReadFinal();
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->body, "held");
  auto r2 = c.ReadFinal();
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->body, "POST /next " + big);
  EXPECT_TRUE(c.WaitClosed());
}

}  // namespace
}  // namespace brisk::http
