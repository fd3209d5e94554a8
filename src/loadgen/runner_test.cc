// The whole client path against an in-process fake OpenAI server (Asio, on its
// own thread, port 0): chunked SSE written in odd pieces, usage, 429s, 500s,
// stalls, and the in-flight limits of both load shapes.
#include "loadgen/runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <thread>

#include "loadgen/report.h"

namespace brisk::loadgen {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using json = nlohmann::json;

class FakeServer {
 public:
  int reject_every = 0;  // every k-th completion request gets HTTP 429
  int fail_every = 0;    // every k-th gets HTTP 500
  bool stall = false;    // accept, read, never answer
  int token_delay_ms = 2;
  bool send_usage = true;

  FakeServer() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {}
  ~FakeServer() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  void Start() {
    asio::co_spawn(io_, Accept(), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }
  int max_active() const { return max_active_; }
  int requests() const { return requests_; }
  json last_body() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_body_;
  }

 private:
  asio::awaitable<void> Accept() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(kNoThrow);
      if (ec) co_return;
      asio::co_spawn(io_, Session(std::move(socket)), asio::detached);
    }
  }

  // Reads one request (headers + Content-Length body) by hand.
  static asio::awaitable<std::pair<std::string, std::string>> ReadRequest(tcp::socket& s) {
    std::string data;
    size_t header_end;
    char buf[4096];
    while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
      auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), kNoThrow);
      if (ec) co_return std::make_pair(std::string(), std::string());
      data.append(buf, n);
    }
    std::string head = data.substr(0, header_end);
    size_t length = 0;
    if (size_t p = head.find("Content-Length: "); p != std::string::npos)
      length = std::stoul(head.substr(p + 16));
    std::string body = data.substr(header_end + 4);
    while (body.size() < length) {
      auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), kNoThrow);
      if (ec) break;
      body.append(buf, n);
    }
    co_return std::make_pair(head, body);
  }

  static asio::awaitable<void> Write(tcp::socket& s, const std::string& text) {
    co_await asio::async_write(s, asio::buffer(text), kNoThrow);
  }

  static std::string Chunk(const std::string& payload) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", payload.size());
    return size + payload + "\r\n";
  }

  asio::awaitable<void> Session(tcp::socket s) {
    auto [head, body] = co_await ReadRequest(s);
    if (head.empty()) co_return;
    if (head.starts_with("GET /v1/models")) {
      const std::string models = R"({"object":"list","data":[{"id":"fake-model"}]})";
      co_await Write(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                            std::to_string(models.size()) + "\r\nConnection: close\r\n\r\n" +
                            models);
      co_return;
    }
    const int n = ++requests_;
    ++active_;
    max_active_ = std::max(max_active_.load(), active_.load());
    json req = json::parse(body, nullptr, false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_body_ = req;
    }
    asio::steady_timer timer(io_);
    if (stall) {
      timer.expires_after(std::chrono::seconds(30));
      co_await timer.async_wait(kNoThrow);
    } else if ((reject_every && n % reject_every == 0) || (fail_every && n % fail_every == 0)) {
      const bool reject = reject_every && n % reject_every == 0;
      const std::string msg = reject ? R"({"error":"busy"})" : R"({"error":"internal"})";
      co_await Write(s, std::string(reject ? "HTTP/1.1 429 Too Many Requests"
                                           : "HTTP/1.1 500 Internal Server Error") +
                            "\r\nContent-Length: " + std::to_string(msg.size()) +
                            "\r\nConnection: close\r\n\r\n" + msg);
    } else {
      const bool chat = head.starts_with("POST /v1/chat/completions");
      const int max_tokens = req.value("max_tokens", 1);
      std::string prompt = chat ? req["messages"].back()["content"].get<std::string>()
                                : req["prompt"].get<std::string>();
      const int prompt_tokens = static_cast<int>(std::count(prompt.begin(), prompt.end(), ' ')) + 1;
      co_await Write(s,
                     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
      for (int t = 0; t < max_tokens; ++t) {
        timer.expires_after(std::chrono::milliseconds(token_delay_ms));
        co_await timer.async_wait(kNoThrow);
        json piece = chat ? json{{"choices", {{{"index", 0}, {"delta", {{"content", " tok"}}}}}}}
                          : json{{"choices", {{{"index", 0}, {"text", " tok"}}}}};
        const std::string event = "data: " + piece.dump() + "\n\n";
        // Split every event across two HTTP chunks at an odd place.
        co_await Write(s, Chunk(event.substr(0, 7)) + Chunk(event.substr(7)));
      }
      json fin = {{"choices", {{{"index", 0}, {"text", ""}, {"finish_reason", "length"}}}}};
      std::string tail = "data: " + fin.dump() + "\n\n";
      if (send_usage) {
        json usage = {
            {"choices", json::array()},
            {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", max_tokens}}}};
        tail += "data: " + usage.dump() + "\r\n\r\n";
      }
      tail += "data: [DONE]\n\n";
      co_await Write(s, Chunk(tail) + "0\r\n\r\n");
    }
    --active_;
    boost::system::error_code ignored;
    s.shutdown(tcp::socket::shutdown_both, ignored);
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<int> active_{0}, max_active_{0}, requests_{0};
  mutable std::mutex mu_;
  json last_body_;
};

BenchConfig Config(const FakeServer& server) {
  BenchConfig c;
  c.client.url = *http::ParseUrl(server.url());
  c.client.timeout_s = 10;
  c.workload.input = {20, 0.5, LengthDist::kUniform, 0};
  c.workload.output = {5, 0.4, LengthDist::kUniform, 0};
  c.workload.seed = 3;
  c.load.num_requests = 8;
  c.progress = false;
  return c;
}

TEST(Runner, ClosedLoopCompletesWithUsageCounts) {
  FakeServer server;
  server.Start();
  BenchConfig c = Config(server);
  c.load.concurrency = 3;
  c.load.warmup = 2;
  c.slo = *ParseSlo("ttft=5s");
  auto r = RunBench(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.client.request.model, "fake-model");  // from GET /v1/models
  EXPECT_EQ(server.requests(), 10);                         // 2 warm-up + 8
  EXPECT_EQ(server.max_active(), 3);
  const BenchMetrics& m = r->metrics;
  EXPECT_EQ(m.completed, 8);
  EXPECT_EQ(m.errors + m.rejected + m.cancelled, 0);
  EXPECT_EQ(m.good_requests, 8);
  int64_t want_out = 0, want_in = 0;
  for (const RequestRecord& q : r->records) {
    EXPECT_EQ(q.status, RequestStatus::kOk) << q.error;
    EXPECT_EQ(q.output_tokens, q.max_tokens);
    EXPECT_EQ(q.content_chunks, q.max_tokens);
    EXPECT_TRUE(q.output_tokens_from_usage);
    EXPECT_TRUE(q.prompt_tokens_from_usage);
    EXPECT_EQ(static_cast<int64_t>(q.itl_s.size()), q.max_tokens - 1);
    EXPECT_GT(q.ttft_s, 0);
    EXPECT_GE(q.e2e_s, q.ttft_s);
    EXPECT_EQ(q.finish_reason, "length");
    want_out += q.max_tokens;
    want_in += q.prompt_tokens;
  }
  EXPECT_EQ(m.total_output_tokens, want_out);
  EXPECT_EQ(m.total_input_tokens, want_in);
  EXPECT_GT(m.duration_s, 0);

  json j = ResultToJson(*r);
  EXPECT_EQ(j["format"], "brisk-bench-result/1");
  EXPECT_EQ(j["summary"]["completed"], 8);
  EXPECT_EQ(j["summary"]["total_output_tokens"], want_out);
  EXPECT_EQ(j["summary"]["output_tokens_from_usage"], 8);
  EXPECT_EQ(j["requests"].size(), 8u);
  EXPECT_EQ(j["config"]["mode"], "closed-loop");
  EXPECT_EQ(j["config"]["request_rate"], "inf");
  EXPECT_NE(FormatSummary(*r).find("Request goodput (req/s):"), std::string::npos);
}

TEST(Runner, OpenLoopRespectsTheInflightCapAndCountsRejections) {
  FakeServer server;
  server.reject_every = 4;
  server.fail_every = 5;
  server.token_delay_ms = 5;
  server.Start();
  BenchConfig c = Config(server);
  c.client.request.model = "given";  // no /v1/models call
  c.load.num_requests = 12;
  c.load.request_rate = 500;
  c.load.max_inflight = 2;
  auto r = RunBench(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(server.requests(), 12);
  EXPECT_LE(server.max_active(), 2);
  EXPECT_EQ(server.last_body()["model"], "given");
  const BenchMetrics& m = r->metrics;
  EXPECT_EQ(m.rejected, 3);  // requests 4, 8, 12
  EXPECT_EQ(m.errors, 2);    // requests 5, 10
  EXPECT_EQ(m.completed, 7);
  for (const RequestRecord& q : r->records) {
    if (q.status == RequestStatus::kRejected) {
      EXPECT_EQ(q.http_status, 429);
    }
    if (q.status == RequestStatus::kError) {
      EXPECT_NE(q.error.find("HTTP 500"), std::string::npos);
    }
    EXPECT_GE(q.start_s + 1e-9, q.scheduled_s);  // held back, never early
  }
}

TEST(Runner, ChatEndpointWithoutUsageCountsChunks) {
  FakeServer server;
  server.send_usage = false;
  server.Start();
  BenchConfig c = Config(server);
  c.client.request.api = ApiKind::kChat;
  c.client.request.ignore_eos = true;
  c.load.concurrency = 2;
  auto r = RunBench(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->metrics.completed, 8);
  EXPECT_EQ(server.last_body()["ignore_eos"], true);
  EXPECT_TRUE(server.last_body().contains("messages"));
  for (const RequestRecord& q : r->records) {
    EXPECT_FALSE(q.output_tokens_from_usage);
    EXPECT_EQ(q.output_tokens, q.max_tokens);
  }
}

TEST(Runner, TimeoutsAndConnectionFailuresAreErrors) {
  FakeServer server;
  server.stall = true;
  server.Start();
  BenchConfig c = Config(server);
  c.client.request.model = "m";
  c.client.timeout_s = 0.2;
  c.load.num_requests = 2;
  auto r = RunBench(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->metrics.errors, 2);
  EXPECT_NE(r->records[0].error.find("timed out"), std::string::npos) << r->records[0].error;

  // Nothing listening: model discovery fails up front with a clear error.
  BenchConfig d = Config(server);
  d.client.url = *http::ParseUrl("http://127.0.0.1:1");
  auto none = RunBench(d);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--model"), std::string::npos);
}

TEST(Runner, InterruptCancelsWhatIsInFlightAndKeepsWhatFinished) {
  FakeServer server;
  server.stall = true;
  server.Start();
  BenchConfig c = Config(server);
  c.client.request.model = "m";
  c.load.num_requests = 3;
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(::getpid(), SIGINT);  // caught by the runner's signal_set
  });
  auto r = RunBench(c);
  interrupter.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->interrupted);
  EXPECT_EQ(r->metrics.cancelled, 3);
  EXPECT_EQ(r->metrics.completed, 0);
}

}  // namespace
}  // namespace brisk::loadgen
