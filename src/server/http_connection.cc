#include "server/http_connection.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>
#include <ctime>
#include <exception>
#include <nlohmann/json.hpp>

namespace brisk::http::internal {
namespace {

namespace bhttp = beast::http;

constexpr size_t kMinReadBytes = 2 << 10;
constexpr size_t kMaxReadBytes = 64 << 10;
constexpr size_t kMaxBatchBuffers = 64;  // buffers per gathered write
constexpr size_t kMaxLingerBytes = 1 << 20;
constexpr std::chrono::milliseconds kLingerTimeout{2000};

// IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT"; formatted at most once a second per thread.
std::string_view HttpDate() {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  thread_local std::time_t cached = -1;
  thread_local char buf[40];
  thread_local size_t len = 0;
  std::time_t now = std::time(nullptr);
  if (now != cached) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    auto r = fmt::format_to_n(buf, sizeof(buf), "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
                              kDays[tm.tm_wday % 7], tm.tm_mday, kMonths[tm.tm_mon % 12],
                              tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    len = std::min(r.size, sizeof(buf));
    cached = now;
  }
  return {buf, len};
}

std::string_view Reason(int status) {
  auto r = bhttp::obsolete_reason(static_cast<bhttp::status>(status));
  if (r.empty() || r.front() == '<') return "Unknown";
  return {r.data(), r.size()};
}

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool ValidHeaderName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), IsTokenChar);
}

bool ValidHeaderValue(std::string_view value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool IEquals(std::string_view a, std::string_view b) { return beast::iequals(a, b); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "/v1/models?x=1" -> "/v1/models"; absolute-form "http://h:1/a?b" -> "/a".
std::string PathOf(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() >= scheme.size() && IEquals(target.substr(0, scheme.size()), scheme)) {
      target.remove_prefix(scheme.size());
      size_t slash = target.find_first_of("/?#");
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
      if (target.front() != '/') return "/";
      break;
    }
  }
  return std::string(target.substr(0, target.find_first_of("?#")));
}

std::string FormatRemote(const tcp::endpoint& ep) {
  std::string addr = ep.address().to_string();
  if (ep.address().is_v6()) return fmt::format("[{}]:{}", addr, ep.port());
  return fmt::format("{}:{}", addr, ep.port());
}

}  // namespace

Connection::Connection(std::shared_ptr<ServerCore> core, tcp::socket socket, uint64_t id)
    : core_(std::move(core)),
      executor_(socket.get_executor()),
      socket_(std::move(socket)),
      timer_(executor_),
      id_(id) {}

void Connection::Start() {
  if (phase_ == Phase::kClosed) return;  // Drain or Shutdown got here first
  beast::error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);  // streamed tokens are small writes
  // Reads are "wait until readable, then read_some on the strand"; an idle connection holds no
  // read buffer, and the buffer is never touched by an operation in flight.
  socket_.non_blocking(true, ec);
  if (ec) {
    Close();
    return;
  }
  auto ep = socket_.remote_endpoint(ec);
  remote_ = ec ? std::string("unknown") : FormatRemote(ep);
  BeginRequest();
}

void Connection::BeginRequest() {
  phase_ = Phase::kReading;
  reply_ = Reply::kNone;
  responder_.reset();
  parser_.emplace();
  parser_->header_limit(
      static_cast<uint32_t>(std::min<size_t>(core_->opts.max_header_bytes, UINT32_MAX)));
  parser_->body_limit(core_->opts.max_body_bytes);
  parser_->eager(true);
  header_checked_ = false;
  header_seen_ = 0;
  request_started_ = in_.size() > 0;
  if (request_started_) {
    ArmTimer(Clock::now() + core_->opts.request_timeout);
    ParseRequest();
  } else {
    in_.shrink_to_fit();  // an idle connection holds no buffer
    ArmTimer(Clock::now() + core_->opts.idle_timeout);
  }
  WaitRead();
}

void Connection::WaitRead() {
  if (read_waiting_ || phase_ == Phase::kClosed) return;
  // While a response is pending, early bytes of the next request are kept but bounded; past the
  // bound reading pauses (and with it disconnect detection) until the response is done.
  if (phase_ == Phase::kResponding &&
      in_.size() >= std::max<size_t>(core_->opts.max_header_bytes, kMaxReadBytes)) {
    return;
  }
  read_waiting_ = true;
  socket_.async_wait(tcp::socket::wait_read,
                     [self = shared_from_this()](beast::error_code ec) { self->OnReadable(ec); });
}

void Connection::OnReadable(beast::error_code ec) {
  read_waiting_ = false;
  if (phase_ == Phase::kClosed) return;
  if (ec) {
    Close();
    return;
  }
  beast::error_code aec;
  size_t want = std::clamp<size_t>(socket_.available(aec), kMinReadBytes, kMaxReadBytes);
  size_t n = socket_.read_some(in_.prepare(want), ec);
  if (ec == net::error::would_block || ec == net::error::try_again) {
    WaitRead();
    return;
  }
  if (ec) {  // EOF or reset: the client went away
    Close();
    return;
  }
  in_.commit(n);
  switch (phase_) {
    case Phase::kReading:
      if (!request_started_) {
        request_started_ = true;
        ArmTimer(Clock::now() + core_->opts.request_timeout);
      }
      ParseRequest();
      break;
    case Phase::kResponding: break;  // the next request's bytes; parsed when this one is done
    case Phase::kLingering:
      linger_discarded_ += in_.size();
      in_.clear();
      if (linger_discarded_ > kMaxLingerBytes) {
        Close();
        return;
      }
      break;
    case Phase::kClosed: return;
  }
  WaitRead();
}

void Connection::ParseRequest() {
  while (phase_ == Phase::kReading && in_.size() > 0) {
    // Beast's header_limit bounds what one put() sees; the limit is on the
    // whole header section, however it arrives.
    const bool in_header = !parser_->is_header_done();
    if (in_header) {
      const std::string_view buf(static_cast<const char*>(in_.data().data()), in_.size());
      const size_t end = buf.find("\r\n\r\n");
      const size_t header_here = end == std::string_view::npos ? buf.size() : end + 4;
      if (header_seen_ + header_here > core_->opts.max_header_bytes) {
        Reject(431, "request header too large");
        return;
      }
    }
    beast::error_code ec;
    size_t n = parser_->put(in_.data(), ec);
    if (in_header && !parser_->is_header_done()) header_seen_ += n;
    in_.consume(n);
    if (ec && ec != bhttp::error::need_more) {
      if (ec == bhttp::error::header_limit) {
        Reject(431, "request header too large\n");
      } else if (ec == bhttp::error::body_limit) {
        Reject(413, "request body too large\n");
      } else {
        Reject(400, fmt::format("bad request: {}\n", ec.message()));
      }
      return;
    }
    if (parser_->is_header_done() && !header_checked_ && !CheckHeader()) return;
    if (parser_->is_done()) {
      Dispatch();
      return;
    }
    if (ec == bhttp::error::need_more || n == 0) break;
  }
}

bool Connection::CheckHeader() {
  header_checked_ = true;
  const auto& h = parser_->get();
  if (h.version() / 10 != 1) {
    Reject(505, "HTTP version not supported\n");
    return false;
  }
  // Beast decodes only chunked framing and treats any other coding as "no body", which would
  // make the body the next request. Refuse whatever it would not decode.
  int te_count = 0;
  bool te_chunked_only = true;
  for (const auto& f : h) {
    if (f.name() != bhttp::field::transfer_encoding) continue;
    ++te_count;
    auto v = f.value();
    te_chunked_only &= IEquals(Trim({v.data(), v.size()}), "chunked");
  }
  if (te_count > 1 || !te_chunked_only) {
    Reject(501, "unsupported transfer-encoding\n");
    return false;
  }
  auto expect = h[bhttp::field::expect];
  if (!expect.empty()) {
    if (!IEquals(Trim({expect.data(), expect.size()}), "100-continue")) {
      Reject(417, "unsupported expectation\n");
      return false;
    }
    if (h.version() >= 11 && !parser_->is_done()) Enqueue("HTTP/1.1 100 Continue\r\n\r\n");
  }
  return true;
}

void Connection::Dispatch() {
  auto msg = parser_->release();
  parser_.reset();
  DisarmTimer();
  phase_ = Phase::kResponding;
  reply_ = Reply::kNone;
  ++seq_;
  version_ = msg.version();
  keep_alive_ = msg.keep_alive() && !draining_;
  head_ = msg.method() == bhttp::verb::head;

  Request req;
  auto method = msg.method_string();
  req.method.assign(method.data(), method.size());
  auto target = msg.target();
  req.target.assign(target.data(), target.size());
  req.path = PathOf(req.target);
  req.headers.reserve(16);
  for (const auto& f : msg) {
    auto name = f.name_string();
    auto value = f.value();
    req.headers.emplace_back(std::string(name.data(), name.size()),
                             std::string(value.data(), value.size()));
  }
  req.body = std::move(msg.body());
  req.remote = remote_;

  auto res = std::shared_ptr<Responder>(new Responder(shared_from_this(), seq_));
  responder_ = res;
  const uint64_t seq = seq_;
  try {
    core_->handler(std::move(req), std::move(res));
  } catch (const std::exception& e) {
    fmt::print(stderr, "[http] handler threw for {}: {}\n", remote_, e.what());
    DoSend(seq, 500, {{"Content-Type", "text/plain"}}, "internal server error\n");
  } catch (...) {
    fmt::print(stderr, "[http] handler threw a non-exception for {}\n", remote_);
    DoSend(seq, 500, {{"Content-Type", "text/plain"}}, "internal server error\n");
  }
}

void Connection::Reject(int status, std::string_view text) {
  parser_.reset();
  in_.clear();
  DisarmTimer();
  phase_ = Phase::kResponding;
  reply_ = Reply::kNone;
  responder_.reset();
  ++seq_;
  version_ = 11;
  keep_alive_ = false;
  head_ = false;
  // The OpenAI error shape, so API clients can read errors of the HTTP layer too.
  std::string msg(text);
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  nlohmann::json err = {{"error",
                         {{"message", msg},
                          {"type", "invalid_request_error"},
                          {"param", nullptr},
                          {"code", status == 413   ? "body_too_large"
                                   : status == 431 ? "header_too_large"
                                   : status == 408 ? "request_timeout"
                                                   : "bad_http_request"}}}};
  const std::string body = err.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  Enqueue(BuildHead(status, {{"Content-Type", "application/json"}}, Framing::kLength, body.size()));
  Enqueue(body);
  reply_ = Reply::kComplete;
  OnReplyComplete();
}

void Connection::Drain() {
  draining_ = true;
  switch (phase_) {
    case Phase::kReading:
      if (!request_started_) Close();  // idle keep-alive; a request in progress completes
      break;
    case Phase::kResponding:
      if (reply_ == Reply::kNone) keep_alive_ = false;  // headers not sent yet: say close
      break;
    default: break;
  }
}

void Connection::Close() {
  if (phase_ == Phase::kClosed) return;
  const bool fire = phase_ == Phase::kResponding && reply_ != Reply::kComplete;
  phase_ = Phase::kClosed;
  DisarmTimer();
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  // Buffers in flight stay until OnWritten runs; drop the rest now.
  size_t dropped = 0;
  for (size_t i = writing_count_; i < out_.size(); ++i) dropped += out_[i].size();
  out_.erase(out_.begin() + static_cast<ptrdiff_t>(writing_count_), out_.end());
  pending_bytes.fetch_sub(dropped, std::memory_order_relaxed);
  parser_.reset();
  in_.clear();
  in_.shrink_to_fit();
  core_->Unregister(id_);
  auto responder = responder_.lock();
  responder_.reset();
  if (fire && responder) responder->FireClose();
}

void Connection::ArmTimer(Clock::time_point when) {
  const uint64_t gen = ++timer_gen_;
  timer_.expires_at(when);
  timer_.async_wait(
      [self = shared_from_this(), gen](beast::error_code ec) { self->OnTimer(gen, ec); });
}

void Connection::DisarmTimer() {
  ++timer_gen_;
  timer_.cancel();
}

void Connection::OnTimer(uint64_t gen, beast::error_code ec) {
  if (ec || gen != timer_gen_) return;
  switch (phase_) {
    case Phase::kReading:
      if (request_started_) {
        Reject(408, "request timeout\n");
      } else {
        Close();  // idle keep-alive
      }
      break;
    case Phase::kResponding:
      if (reply_ == Reply::kComplete) Close();  // the client stopped reading our response
      break;
    case Phase::kLingering: Close(); break;
    case Phase::kClosed: break;
  }
}

std::string Connection::BuildHead(int status, const Headers& headers, Framing framing,
                                  size_t length) {
  std::string h;
  h.reserve(256);
  fmt::format_to(std::back_inserter(h), "HTTP/1.1 {} {}\r\n", status, Reason(status));
  bool has_date = false, has_server = false, has_cache_control = false;
  for (const auto& [name, value] : headers) {
    if (!ValidHeaderName(name) || !ValidHeaderValue(value)) {
      fmt::print(stderr, "[http] dropping invalid response header '{}'\n", name);
      continue;
    }
    if (IEquals(name, "Content-Length") || IEquals(name, "Transfer-Encoding")) continue;
    if (IEquals(name, "Connection")) {
      if (beast::http::token_list(value).exists("close")) keep_alive_ = false;
      continue;
    }
    has_date |= IEquals(name, "Date");
    has_server |= IEquals(name, "Server");
    has_cache_control |= IEquals(name, "Cache-Control");
    h.append(name).append(": ").append(value).append("\r\n");
  }
  if (!has_date) h.append("Date: ").append(HttpDate()).append("\r\n");
  if (!has_server) h.append("Server: brisk\r\n");
  switch (framing) {
    case Framing::kNone: break;
    case Framing::kLength:
      fmt::format_to(std::back_inserter(h), "Content-Length: {}\r\n", length);
      break;
    case Framing::kChunked:
      if (!has_cache_control) h.append("Cache-Control: no-cache\r\n");
      h.append("Transfer-Encoding: chunked\r\n");
      break;
    case Framing::kUntilClose:
      if (!has_cache_control) h.append("Cache-Control: no-cache\r\n");
      break;
  }
  if (!keep_alive_) {
    h.append("Connection: close\r\n");
  } else if (version_ == 10) {
    h.append("Connection: keep-alive\r\n");
  }
  h.append("\r\n");
  return h;
}

void Connection::DoSend(uint64_t seq, int status, Headers headers, std::string body) {
  if (!Current(seq) || reply_ != Reply::kNone) return;
  if (status < 200 || status > 999) {
    fmt::print(stderr, "[http] handler sent invalid status {}; answering 500\n", status);
    status = 500;
    headers = {{"Content-Type", "text/plain"}};
    body = "internal server error\n";
  }
  const bool no_body = status == 204 || status == 304;
  Enqueue(BuildHead(status, headers, no_body ? Framing::kNone : Framing::kLength, body.size()));
  if (!head_ && !no_body) Enqueue(std::move(body));
  reply_ = Reply::kComplete;
  OnReplyComplete();
}

void Connection::DoStartStream(uint64_t seq, int status, Headers headers) {
  if (!Current(seq) || reply_ != Reply::kNone) return;
  if (status < 200 || status > 999) {
    fmt::print(stderr, "[http] handler started a stream with invalid status {}\n", status);
    status = 500;
  }
  chunked_ = version_ >= 11;
  if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the body ends when the connection closes
  Enqueue(BuildHead(status, headers, chunked_ ? Framing::kChunked : Framing::kUntilClose, 0));
  reply_ = Reply::kStreaming;
}

void Connection::DoWrite(uint64_t seq, std::string data) {
  const size_t n = data.size();
  pending_bytes.fetch_sub(n, std::memory_order_relaxed);  // re-added by Enqueue
  if (!Current(seq) || reply_ != Reply::kStreaming || head_) return;
  if (chunked_) {
    std::string chunk;
    chunk.reserve(data.size() + 16);
    fmt::format_to(std::back_inserter(chunk), "{:x}\r\n", data.size());
    chunk.append(data).append("\r\n");
    Enqueue(std::move(chunk));
  } else {
    Enqueue(std::move(data));
  }
  // Bytes queued ahead of this chunk: one Write larger than the limit alone is not "behind".
  const size_t behind = pending_bytes.load(std::memory_order_relaxed) -
                        std::min(pending_bytes.load(std::memory_order_relaxed), n);
  if (behind > core_->opts.max_write_queue_bytes) {
    fmt::print(stderr, "[http] {}: stream consumer {} bytes behind; disconnecting\n", remote_,
               behind);
    Close();
  }
}

void Connection::DoEnd(uint64_t seq) {
  if (!Current(seq)) return;
  if (reply_ == Reply::kNone) {  // End() without StartStream(): an empty 200
    DoSend(seq, 200, {}, "");
    return;
  }
  if (reply_ != Reply::kStreaming) return;
  if (chunked_ && !head_) Enqueue("0\r\n\r\n");
  reply_ = Reply::kComplete;
  OnReplyComplete();
}

void Connection::OnResponderDropped(uint64_t seq) {
  if (!Current(seq)) return;
  if (reply_ == Reply::kNone) {
    fmt::print(stderr, "[http] {}: handler dropped the request without answering\n", remote_);
    DoSend(seq, 500, {{"Content-Type", "text/plain"}}, "internal server error: no response\n");
  } else if (reply_ == Reply::kStreaming) {
    fmt::print(stderr, "[http] {}: stream dropped without End(); closing\n", remote_);
    Close();
  }
}

void Connection::Enqueue(std::string data) {
  if (data.empty() || phase_ == Phase::kClosed) return;
  pending_bytes.fetch_add(data.size(), std::memory_order_relaxed);
  out_.push_back(std::move(data));
  StartWrite();
}

void Connection::StartWrite() {
  if (writing_count_ > 0 || out_.empty() || phase_ == Phase::kClosed) return;
  std::vector<net::const_buffer> bufs;
  const size_t n = std::min(out_.size(), kMaxBatchBuffers);
  bufs.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    bufs.push_back(net::buffer(out_[i]));
    writing_bytes_ += out_[i].size();
  }
  writing_count_ = n;
  net::async_write(socket_, bufs, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->OnWritten(ec);
  });
}

void Connection::OnWritten(beast::error_code ec) {
  for (size_t i = 0; i < writing_count_; ++i) out_.pop_front();
  pending_bytes.fetch_sub(writing_bytes_, std::memory_order_relaxed);
  writing_count_ = 0;
  writing_bytes_ = 0;
  if (phase_ == Phase::kClosed) return;
  if (ec) {
    Close();
    return;
  }
  if (!out_.empty()) {
    StartWrite();
    return;
  }
  if (phase_ == Phase::kResponding && reply_ == Reply::kComplete) OnResponseFlushed();
}

void Connection::OnReplyComplete() {
  if (auto responder = responder_.lock()) responder->Finish();
  responder_.reset();
  if (writing_count_ == 0 && out_.empty()) {
    OnResponseFlushed();
  } else {
    ArmTimer(Clock::now() + core_->opts.idle_timeout);
  }
}

void Connection::OnResponseFlushed() {
  if (!keep_alive_ || draining_) {
    BeginLinger();
  } else {
    BeginRequest();
  }
}

void Connection::BeginLinger() {
  phase_ = Phase::kLingering;
  parser_.reset();
  in_.clear();
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) {
    Close();
    return;
  }
  ArmTimer(Clock::now() + std::min<Clock::duration>(kLingerTimeout, core_->opts.idle_timeout));
  WaitRead();
}

}  // namespace brisk::http::internal
