#include "http/upstream_client.h"

#include <algorithm>
#include <array>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>
#include <exception>
#include <optional>

#include "http/upstream_pool.h"

namespace brisk::http {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using internal::UpstreamConnection;
using internal::UpstreamEndpoints;
using internal::UpstreamPool;

constexpr size_t kReadChunkBytes = 16 << 10;
constexpr uint32_t kMaxHeaderBytes = 64 << 10;
constexpr size_t kMaxFetchBytes = 16 << 20;

// Headers that describe this hop's connection, not the request: the client
// sets its own (Host, framing, keep-alive) and drops the caller's.
bool IsHopByHop(std::string_view name) {
  for (std::string_view h : {"host", "connection", "keep-alive", "content-length",
                             "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}) {
    if (beast::iequals(name, h)) return true;
  }
  return false;
}

// One request/response exchange. Every step runs on the call's strand, so
// the caller's callbacks never overlap; Cancel() from any thread posts there.
class Call final : public UpstreamCall, public std::enable_shared_from_this<Call> {
 public:
  Call(std::shared_ptr<UpstreamPool> pool, UpstreamRequest request)
      : pool_(std::move(pool)),
        strand_(asio::make_strand(pool_->executor())),
        timer_(strand_),
        request_(std::move(request)) {}

  void Start(UpstreamCallbacks callbacks) {
    callbacks_ = std::move(callbacks);
    asio::post(strand_, [self = shared_from_this()] { self->Step([&] { self->Begin(); }); });
  }

  void Cancel() override {
    asio::post(strand_, [self = shared_from_this()] {
      self->Step([&] {
        if (self->done_) return;
        if (self->conn_) self->conn_->Abort();
        self->Finish(Status(StatusCode::kCancelled, "upstream request cancelled"));
      });
    });
  }

  // Ends the call from inside one of its own callbacks (on the strand).
  void AbortFromCallback(Status status) {
    if (done_) return;
    if (conn_) conn_->Abort();
    Finish(std::move(status));
  }

 private:
  // The one exception boundary: every handler body runs in here. Callbacks
  // are dropped once the call is done (they may hold the caller, which
  // holds this call), but only here, never while one of them runs.
  template <typename Fn>
  void Step(Fn&& fn) noexcept {
    try {
      fn();
    } catch (const std::exception& e) {
      Crashed(e.what());
    } catch (...) {
      Crashed("unknown exception");
    }
    if (done_) callbacks_ = {};
  }

  void Crashed(const char* what) noexcept {
    try {
      if (!done_) {
        if (conn_) conn_->Abort();
        Finish(Internal("upstream {}: {}", pool_->url().ToString(), what));
      }
    } catch (...) {
      done_ = true;  // on_done itself threw: nothing more can be reported
    }
  }

  void Begin() {
    if (done_) return;  // cancelled before it started
    BuildRequest();
    conn_ = pool_->TakeIdle();
    reused_ = conn_ != nullptr;
    if (reused_) {
      if (callbacks_.on_connected) callbacks_.on_connected(true);
      Write();
    } else {
      Connect();
    }
  }

  void BuildRequest() {
    const ServerUrl& url = pool_->url();
    std::string target = url.base_path + request_.path;
    if (target.empty()) target = "/";
    message_.version(11);
    const bhttp::verb verb = bhttp::string_to_verb(request_.method);
    if (verb == bhttp::verb::unknown) {
      message_.method_string(request_.method);
    } else {
      message_.method(verb);
    }
    message_.target(target);
    message_.set(bhttp::field::host, pool_->host_header());
    bool user_agent = false;
    for (const auto& [name, value] : request_.headers) {
      if (IsHopByHop(name)) continue;
      user_agent = user_agent || beast::iequals(name, "user-agent");
      message_.insert(name, value);
    }
    if (!user_agent) message_.set(bhttp::field::user_agent, "brisk-gateway");
    message_.keep_alive(true);
    message_.body() = std::move(request_.body);
    message_.prepare_payload();
    head_only_ = verb == bhttp::verb::head;
  }

  void Connect() {
    std::shared_ptr<const UpstreamEndpoints> endpoints = pool_->endpoints();
    if (endpoints) return ConnectTo(std::move(endpoints));
    resolver_.emplace(strand_);
    ArmTimer(pool_->options().connect_timeout);
    resolver_->async_resolve(
        pool_->url().host, pool_->url().port,
        [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
          self->Step([&] { self->OnResolved(ec, results); });
        });
  }

  void OnResolved(beast::error_code ec, const tcp::resolver::results_type& results) {
    if (done_) return;
    resolver_.reset();
    if (timed_out_) return Fail(StatusCode::kUnavailable, "resolving the host timed out");
    if (ec) return Fail(StatusCode::kUnavailable, "resolving the host: " + ec.message());
    UpstreamEndpoints endpoints;
    for (const auto& entry : results) endpoints.push_back(entry.endpoint());
    if (endpoints.empty()) return Fail(StatusCode::kUnavailable, "the host has no address");
    auto shared = std::make_shared<const UpstreamEndpoints>(std::move(endpoints));
    pool_->SetEndpoints(shared);
    ConnectTo(std::move(shared));
  }

  void ConnectTo(std::shared_ptr<const UpstreamEndpoints> endpoints) {
    conn_ = pool_->NewConnection();
    reused_ = false;
    ArmTimer(pool_->options().connect_timeout);
    const UpstreamEndpoints& list = *endpoints;
    asio::async_connect(conn_->socket, list,
                        asio::bind_executor(strand_, [self = shared_from_this(), endpoints](
                                                         beast::error_code ec, tcp::endpoint) {
                          self->Step([&] { self->OnConnected(ec); });
                        }));
  }

  void OnConnected(beast::error_code ec) {
    if (done_) return;
    if (timed_out_ || ec) {
      pool_->ForgetResolvedEndpoints();
      return Fail(StatusCode::kUnavailable,
                  timed_out_ ? fmt::format("connect timed out after {} ms",
                                           pool_->options().connect_timeout.count())
                             : "connect: " + ec.message());
    }
    beast::error_code ignored;
    conn_->socket.set_option(tcp::no_delay(true), ignored);
    if (callbacks_.on_connected) callbacks_.on_connected(false);
    if (done_) return;
    Write();
  }

  // The head timeout runs from the first byte sent: a request the upstream
  // does not even read is as stuck as one it does not answer.
  void Write() {
    ArmTimer(pool_->options().head_timeout);
    bhttp::async_write(
        conn_->socket, message_,
        asio::bind_executor(strand_, [self = shared_from_this()](beast::error_code ec, size_t) {
          self->Step([&] { self->OnWritten(ec); });
        }));
  }

  void OnWritten(beast::error_code ec) {
    if (done_) return;
    if (timed_out_) return HeadTimedOut();
    if (ec) {
      if (CanRetryOnFreshConnection()) return RetryOnFreshConnection();
      return Fail(StatusCode::kUnavailable, "sending the request: " + ec.message());
    }
    ArmTimer(pool_->options().head_timeout);
    ReadHeader();
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(boost::none);
    parser_->header_limit(kMaxHeaderBytes);
    if (head_only_) parser_->skip(true);
    bhttp::async_read_header(
        conn_->socket, conn_->buffer, *parser_,
        asio::bind_executor(strand_, [self = shared_from_this()](beast::error_code ec, size_t) {
          self->Step([&] { self->OnHeader(ec); });
        }));
  }

  void OnHeader(beast::error_code ec) {
    if (done_) return;
    if (timed_out_) return HeadTimedOut();
    if (ec) {
      if (CanRetryOnFreshConnection()) return RetryOnFreshConnection();
      return Fail(StatusCode::kUnavailable, "reading the response head: " + ec.message());
    }
    const int status = static_cast<int>(parser_->get().result_int());
    if (status >= 100 && status < 200 && status != 101) return ReadHeader();  // interim: skip
    if (status == 101) reusable_ = false;  // the connection would speak another protocol now
    Headers headers;
    for (const auto& field : parser_->get()) {
      headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    head_delivered_ = true;
    head_counts_.clear();
    for (const auto& [name, value] : headers) {
      std::string lower = Lower(name);
      auto it = std::find_if(head_counts_.begin(), head_counts_.end(),
                             [&](const auto& s) { return s.first == lower; });
      if (it == head_counts_.end()) {
        head_counts_.emplace_back(std::move(lower), 1);
      } else {
        ++it->second;
      }
    }
    if (callbacks_.on_head) callbacks_.on_head(status, headers);
    if (done_) return;
    if (parser_->is_done()) return Succeed();
    ReadBody();
  }

  void ReadBody() {
    ArmTimer(pool_->options().idle_timeout);
    auto& body = parser_->get().body();
    body.data = chunk_.data();
    body.size = chunk_.size();
    bhttp::async_read_some(
        conn_->socket, conn_->buffer, *parser_,
        asio::bind_executor(strand_, [self = shared_from_this()](beast::error_code ec, size_t) {
          self->Step([&] { self->OnBody(ec); });
        }));
  }

  void OnBody(beast::error_code ec) {
    if (done_) return;
    const size_t got = chunk_.size() - parser_->get().body().size;
    if (got > 0 && callbacks_.on_data) {
      callbacks_.on_data(std::string_view(chunk_.data(), got));
      if (done_) return;
    }
    if (ec == bhttp::error::need_buffer) ec = {};
    if (timed_out_) {
      return Fail(StatusCode::kDataLoss, fmt::format("the response body stalled for {} ms",
                                                     pool_->options().idle_timeout.count()));
    }
    if (ec) return Fail(StatusCode::kDataLoss, "reading the response body: " + ec.message());
    if (parser_->is_done()) return Succeed();
    ReadBody();
  }

  static std::string Lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }

  // Beast adds trailer fields to the message's fields (each next to the
  // fields of the same name, so not after the head's in list order): per
  // name, the occurrences past the head's count are the trailer's.
  void DeliverTrailers() {
    std::vector<std::pair<std::string, size_t>> seen = head_counts_;
    Headers trailers;
    for (const auto& field : parser_->get()) {
      std::string name = Lower(field.name_string());
      auto it =
          std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == name; });
      if (it != seen.end() && it->second > 0) {
        --it->second;
        continue;
      }
      trailers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    if (!trailers.empty()) callbacks_.on_trailers(trailers);
  }

  // A reused keep-alive connection that fails before any response byte was
  // closed by the server while idle (the request was never processed), so it
  // is sent again, once, on a new connection. Not after a timeout: then the
  // upstream may be working on it.
  bool CanRetryOnFreshConnection() const {
    return reused_ && !retried_ && !timed_out_ && (!parser_ || !parser_->got_some()) &&
           conn_->buffer.size() == 0;
  }

  void RetryOnFreshConnection() {
    retried_ = true;
    conn_.reset();  // nothing pending on it: its failed operation just completed
    parser_.reset();
    Connect();
  }

  void HeadTimedOut() {
    Fail(StatusCode::kUnavailable,
         fmt::format("no response head within {} ms", pool_->options().head_timeout.count()));
  }

  // Closes the connection when the phase's time is up; the pending operation
  // then completes with an error and sees timed_out_.
  void ArmTimer(std::chrono::milliseconds timeout) {
    const uint64_t generation = ++timer_generation_;
    timer_.expires_after(timeout);
    timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
      self->Step([&] {
        if (ec || self->done_ || generation != self->timer_generation_) return;
        self->timed_out_ = true;
        if (self->resolver_) self->resolver_->cancel();
        if (self->conn_) self->conn_->Abort();
      });
    });
  }

  void Fail(StatusCode code, std::string_view what) {
    // The failure kind is the caller's retry rule: nothing reached it before
    // the head, so that is retryable (kUnavailable); after it, data was lost.
    if (head_delivered_ && code == StatusCode::kUnavailable) code = StatusCode::kDataLoss;
    Finish(Status(code, fmt::format("upstream {}: {}", pool_->url().ToString(), what)));
  }

  void Succeed() {
    if (callbacks_.on_trailers && parser_->chunked()) DeliverTrailers();
    if (done_) return;
    if (reusable_ && parser_->keep_alive() && conn_->buffer.size() == 0) {
      pool_->Release(std::move(conn_));
    }
    Finish(Status::Ok());
  }

  void Finish(Status status) {
    if (done_) return;
    done_ = true;
    ++timer_generation_;
    timer_.cancel();
    if (resolver_) resolver_->cancel();
    // Closed, not destroyed: an operation may still be pending on it (Cancel);
    // the call, which that operation's handler holds, owns it until then.
    if (conn_) conn_->Close();  // unless Succeed() gave it back to the pool
    auto on_done = std::move(callbacks_.on_done);
    if (on_done) on_done(status);
  }

  const std::shared_ptr<UpstreamPool> pool_;
  const asio::strand<asio::any_io_executor> strand_;
  asio::steady_timer timer_;
  UpstreamRequest request_;
  UpstreamCallbacks callbacks_;
  // Everything below is touched only on the strand.
  bhttp::request<bhttp::string_body> message_;
  std::unique_ptr<UpstreamConnection> conn_;
  std::optional<tcp::resolver> resolver_;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
  std::array<char, kReadChunkBytes> chunk_;
  uint64_t timer_generation_ = 0;
  bool head_only_ = false;
  bool reused_ = false;
  bool retried_ = false;
  bool timed_out_ = false;
  bool head_delivered_ = false;
  // Per lower-case name, the head's fields: the trailer's are the rest.
  std::vector<std::pair<std::string, size_t>> head_counts_;
  bool reusable_ = true;
  bool done_ = false;
};

class Client final : public UpstreamClient {
 public:
  explicit Client(std::shared_ptr<UpstreamPool> pool, std::string base_url)
      : pool_(std::move(pool)), base_url_(std::move(base_url)) {}
  ~Client() override { pool_->Shutdown(); }

  std::shared_ptr<UpstreamCall> Send(UpstreamRequest request,
                                     UpstreamCallbacks callbacks) override {
    auto call = std::make_shared<Call>(pool_, std::move(request));
    call->Start(std::move(callbacks));
    return call;
  }

  void Fetch(UpstreamRequest request,
             std::function<void(Expected<std::pair<int, std::string>>)> done) override {
    struct State {
      int status = 0;
      std::string body;
      std::function<void(Expected<std::pair<int, std::string>>)> done;
    };
    auto state = std::make_shared<State>();
    state->done = std::move(done);
    auto call = std::make_shared<Call>(pool_, std::move(request));
    Call* raw = call.get();  // the callbacks live inside the call
    UpstreamCallbacks callbacks;
    callbacks.on_head = [state](int status, const Headers&) { state->status = status; };
    callbacks.on_data = [state, raw, url = base_url_](std::string_view data) {
      if (state->body.size() + data.size() > kMaxFetchBytes) {
        raw->AbortFromCallback(
            ResourceExhausted("upstream {}: response body over {} bytes", url, kMaxFetchBytes));
        return;
      }
      state->body.append(data);
    };
    callbacks.on_done = [state](const Status& status) {
      if (!state->done) return;
      if (status.ok()) {
        state->done(std::make_pair(state->status, std::move(state->body)));
      } else {
        state->done(status);
      }
    };
    call->Start(std::move(callbacks));
  }

  const std::string& base_url() const override { return base_url_; }
  int open_connections() const override { return pool_->open_connections(); }

 private:
  const std::shared_ptr<UpstreamPool> pool_;
  const std::string base_url_;
};

}  // namespace

Expected<std::pair<int, std::string>> FetchBlocking(UpstreamClient& client,
                                                    boost::asio::io_context& io,
                                                    UpstreamRequest req) {
  Expected<std::pair<int, std::string>> answer = Internal("no answer");
  client.Fetch(std::move(req),
               [&](Expected<std::pair<int, std::string>> r) { answer = std::move(r); });
  io.restart();
  io.run();
  return answer;
}

Expected<std::unique_ptr<UpstreamClient>> UpstreamClient::Create(
    boost::asio::any_io_executor executor, UpstreamOptions options) {
  auto url = ParseUrl(options.base_url);
  if (!url.ok()) return url.status().WithContext("upstream base_url");
  if (url->port.empty() || std::stoi(url->port) < 1 || std::stoi(url->port) > 65535) {
    return InvalidArgument("upstream base_url '{}': port out of range", options.base_url);
  }
  if (options.max_idle < 0) return InvalidArgument("upstream max_idle must be >= 0");
  if (options.connect_timeout.count() <= 0 || options.head_timeout.count() <= 0 ||
      options.idle_timeout.count() <= 0) {
    return InvalidArgument("upstream {}: timeouts must be positive", options.base_url);
  }
  std::string base_url = options.base_url;
  auto pool = std::make_shared<UpstreamPool>(std::move(executor), std::move(url).value(),
                                             std::move(options));
  return std::unique_ptr<UpstreamClient>(new Client(std::move(pool), std::move(base_url)));
}

}  // namespace brisk::http
