// The read side of a Connection: reading, framing limits, header checks, dispatch, disconnect
// detection and closing. The write side is in http_connection_write.cc.
#include "http/connection.h"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <exception>

#include "http/host.h"
#include "util/log.h"

namespace brisk::http::internal {
namespace {

namespace bhttp = beast::http;

constexpr size_t kMinReadBytes = 2 << 10;
constexpr size_t kMaxReadBytes = 64 << 10;
constexpr size_t kMaxLingerBytes = 1 << 20;
constexpr std::chrono::milliseconds kLingerTimeout{2000};
constexpr std::chrono::milliseconds kPausePollInterval{100};
constexpr size_t kMaxChunkLineBytes = 4096;
constexpr size_t kMaxTrailerBytes = 8192;
constexpr size_t kMaxTrailerFields = 64;
constexpr std::string_view kProbe = "HTTP/1.1 100 Continue\r\n\r\n";

std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }

// "/v1/models?x=1" -> "/v1/models"; absolute-form "http://h:1/a?b" -> "/a".
std::string PathOf(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() >= scheme.size() && AsciiIEquals(target.substr(0, scheme.size()), scheme)) {
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
      pause_timer_(executor_),
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
  // One step per put(): the header alone first (checked before any body byte is parsed), then
  // one chunk-size line or one run of data at a time.
  parser_->eager(false);
  header_checked_ = false;
  header_scanned_ = 0;
  header_bytes_ = 0;
  header_tail_ = 0;
  header_end_seen_ = false;
  head_req_.reset();
  guard_.reset();
  guard_scanned_ = 0;
  lease_.reset();
  chunked_body_ = false;
  probe_sent_ = false;
  request_started_ = in_.size() > 0;
  if (request_started_) {
    ArmTimer(Clock::now() + core_->opts.request_timeout);
    ParseRequest();
  } else {
    in_.shrink_to_fit();  // an idle connection holds no buffer
    ArmTimer(Clock::now() + core_->opts.idle_timeout);
  }
  // The client shut its side: what it sent is all there is, and it was not a whole request.
  if (peer_eof_ && phase_ == Phase::kReading) {
    Close();
    return;
  }
  WaitRead();
}

void Connection::WaitRead() {
  if (read_waiting_ || peer_eof_ || phase_ == Phase::kClosed) return;
  // While a response is pending, early bytes of the next request are kept but bounded; past the
  // bound reading pauses, and a timer polls the socket for the client going away instead.
  if (phase_ == Phase::kResponding &&
      in_.size() >= std::max<size_t>(core_->opts.max_header_bytes, kMaxReadBytes)) {
    ArmPausePoll();
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
  if (ec == net::error::eof) {
    OnPeerEof();
    return;
  }
  if (ec) {  // reset: the client went away
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
      if (linger_discarded_ > std::max(kMaxLingerBytes, core_->opts.max_body_bytes)) {
        Close();
        return;
      }
      break;
    case Phase::kClosed: return;
  }
  WaitRead();
}

void Connection::OnPeerEof() {
  peer_eof_ = true;
  switch (phase_) {
    case Phase::kReading:    // idle, or an incomplete request: nothing to answer
    case Phase::kLingering:  // our side is done too
      Close();
      return;
    case Phase::kResponding:
      // A half-close after a complete request: keep going, but find out whether the client
      // is really there (see http_server.h).
      if (reply_ == Reply::kNone) SendProbe();
      WaitError();
      return;
    case Phase::kClosed: return;
  }
}

void Connection::SendProbe() {
  if (probe_sent_ || version_ < 11 || reply_ != Reply::kNone) return;
  probe_sent_ = true;
  Enqueue(std::string(kProbe));
}

void Connection::WaitError() {
  if (error_waiting_ || phase_ == Phase::kClosed) return;
  error_waiting_ = true;
  socket_.async_wait(tcp::socket::wait_error,
                     [self = shared_from_this()](beast::error_code ec) { self->OnErrorWait(ec); });
}

void Connection::OnErrorWait(beast::error_code ec) {
  error_waiting_ = false;
  if (ec || phase_ == Phase::kClosed) return;
  pollfd pfd{socket_.native_handle(), 0, 0};
  if (::poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLERR | POLLHUP))) {
    Close();  // reset: the client is gone
  }
  // Anything else (urgent data) is not waited for again; a failed write still closes.
}

void Connection::ArmPausePoll() {
  if (pause_polling_) return;
  pause_polling_ = true;
  pause_timer_.expires_after(kPausePollInterval);
  pause_timer_.async_wait(
      [self = shared_from_this()](beast::error_code ec) { self->OnPausePoll(ec); });
}

void Connection::OnPausePoll(beast::error_code ec) {
  pause_polling_ = false;
  if (ec || phase_ != Phase::kResponding || read_waiting_) return;  // reading resumed
  pollfd pfd{socket_.native_handle(), POLLRDHUP, 0};
  if (::poll(&pfd, 1, 0) == 1) {
    if (pfd.revents & (POLLERR | POLLHUP)) {
      Close();
      return;
    }
    // FIN behind the buffered bytes. Not an EOF yet (pipelined requests come first), but the
    // probe tells a closed client from a half-closed one.
    if (pfd.revents & POLLRDHUP) SendProbe();
  }
  ArmPausePoll();
}

void Connection::ParseRequest() {
  while (phase_ == Phase::kReading && in_.size() > 0) {
    if (!parser_->is_header_done() && !ScanHeader()) return;
    if (guard_ && !FeedGuard()) return;
    beast::error_code ec;
    // A partial header too: the parser refuses a bad start line (say, TLS bytes) at once.
    const size_t n = parser_->put(in_.data(), ec);
    in_.consume(n);
    header_scanned_ -= std::min(header_scanned_, n);
    guard_scanned_ -= std::min(guard_scanned_, n);
    if (ec && ec != bhttp::error::need_more) {
      if (ec == bhttp::error::header_limit) {
        Reject(431, "request header too large", "header_too_large");
      } else if (ec == bhttp::error::body_limit) {
        Reject(413, "request body too large", "body_too_large");
      } else {
        Reject(400, fmt::format("bad request: {}", ec.message()));
      }
      return;
    }
    if (parser_->is_header_done() && !header_checked_ && !CheckHeader()) return;
    if (chunked_body_ && lease_ && !lease_->GrowTo(parser_->get().body().capacity())) {
      Reject(503, "too many request bodies in flight; retry shortly", "server_busy",
             {{"Retry-After", "1"}});
      return;
    }
    if (parser_->is_done()) {
      Dispatch();
      return;
    }
    if (ec == bhttp::error::need_more || n == 0) break;
  }
  // The parser holds on to an element in progress only: a header section (bounded above) or a
  // chunk-size line / trailer section (bounded by the guard). Anything else is a bug; refuse
  // rather than buffer.
  if (phase_ == Phase::kReading &&
      in_.size() > core_->opts.max_header_bytes + kMaxChunkLineBytes + kMaxTrailerBytes) {
    Reject(400, "request framing element too large");
  }
}

bool Connection::ScanHeader() {
  if (header_end_seen_) return true;
  const std::string_view buf(static_cast<const char*>(in_.data().data()), in_.size());
  for (size_t i = header_scanned_; i < buf.size(); ++i) {
    const char c = buf[i];
    // Obsolete line folding (RFC 9112 section 5.2): a line starting with SP or HTAB. The parser
    // would join it to the previous field; a server in front might not.
    if ((header_tail_ & 0xff) == '\n' && (c == ' ' || c == '\t')) {
      Reject(400, "obsolete line folding in the header section is not allowed");
      return false;
    }
    header_tail_ = (header_tail_ << 8) | static_cast<unsigned char>(c);
    if (++header_bytes_ > core_->opts.max_header_bytes) {
      Reject(431, "request header too large", "header_too_large");
      return false;
    }
    if (header_tail_ == 0x0d0a0d0au) {  // CRLFCRLF: the rest is body
      header_end_seen_ = true;
      header_scanned_ = i + 1;
      return true;
    }
  }
  header_scanned_ = buf.size();
  return true;
}

bool Connection::FeedGuard() {
  const std::string_view buf(static_cast<const char*>(in_.data().data()), in_.size());
  if (guard_scanned_ >= buf.size()) return true;
  const auto r = guard_->Feed(buf.substr(guard_scanned_));
  guard_scanned_ += r.used;
  using V = ChunkedGuard::Verdict;
  switch (r.verdict) {
    case V::kMore:
    case V::kDone: return true;
    case V::kLineTooLong:
      Reject(400, fmt::format("chunk-size line longer than {} bytes", kMaxChunkLineBytes));
      return false;
    case V::kBodyTooLarge:
      Reject(413, "request body too large (chunked framing included)", "body_too_large");
      return false;
    case V::kTrailerTooLarge:
    case V::kTooManyTrailerFields:
      Reject(431,
             fmt::format("trailer section too large (at most {} bytes in {} fields)",
                         kMaxTrailerBytes, kMaxTrailerFields),
             "header_too_large");
      return false;
  }
  return false;
}

bool Connection::CheckHosts(
    const beast::http::request_parser<beast::http::string_body>::value_type& h) {
  int count = 0;
  std::string_view host;
  for (const auto& f : h) {
    if (f.name() != bhttp::field::host) continue;
    ++count;
    host = View(f.value());
  }
  if (count > 1) {
    Reject(400, "more than one Host header");
    return false;
  }
  if (count == 0 && h.version() >= 11) {
    Reject(400, "HTTP/1.1 request without a Host header");
    return false;
  }
  const auto& allowed = core_->opts.allowed_hosts;
  if (count == 1 && !allowed.empty() && !HostAllowed(host, allowed)) {
    Reject(421,
           fmt::format("Host '{}' is not served here (allowed: {}); this protects a server "
                       "without API keys from DNS rebinding",
                       host.substr(0, 200), fmt::join(allowed, ", ")),
           "host_not_allowed");
    return false;
  }
  return true;
}

bool Connection::CheckHeader() {
  header_checked_ = true;
  const auto& h = parser_->get();
  version_ = h.version();
  if (h.version() / 10 != 1) {
    Reject(505, "HTTP version not supported");
    return false;
  }
  // Beast decodes only chunked framing and treats any other coding as "no body", which would
  // make the body the next request. Refuse whatever it would not decode.
  int te_count = 0;
  bool te_chunked_only = true;
  for (const auto& f : h) {
    if (f.name() != bhttp::field::transfer_encoding) continue;
    ++te_count;
    te_chunked_only &= AsciiIEquals(TrimOws(View(f.value())), "chunked");
  }
  if (te_count > 1 || !te_chunked_only) {
    Reject(501, "unsupported transfer-encoding", "not_implemented");
    return false;
  }
  if (!CheckHosts(h)) return false;
  auto expect = h[bhttp::field::expect];
  if (!expect.empty() && !AsciiIEquals(TrimOws(View(expect)), "100-continue")) {
    Reject(417, "unsupported expectation");
    return false;
  }

  Request req;
  req.method = std::string(View(h.method_string()));
  req.target = std::string(View(h.target()));
  req.path = PathOf(req.target);
  req.remote = remote_;
  req.headers.reserve(16);
  for (const auto& f : h) {
    req.headers.emplace_back(std::string(View(f.name_string())), std::string(View(f.value())));
  }
  if (const auto& hook = core_->opts.on_headers) {
    std::optional<EarlyResponse> early;
    try {
      early = hook(req);
    } catch (const std::exception& e) {
      log::Error("[http] on_headers threw for {}: {}", remote_, e.what());
      early = EarlyResponse{500, {{"Content-Type", "text/plain"}}, "internal server error\n"};
    } catch (...) {
      log::Error("[http] on_headers threw a non-exception for {}", remote_);
      early = EarlyResponse{500, {{"Content-Type", "text/plain"}}, "internal server error\n"};
    }
    if (early) {
      head_ = h.method() == bhttp::verb::head;
      AnswerAndClose(early->status, std::move(early->headers), std::move(early->body));
      return false;
    }
  }
  head_req_ = std::move(req);

  chunked_body_ = parser_->chunked();
  const auto length = parser_->content_length();
  if (chunked_body_ || (length && *length > 0)) {
    lease_ = std::make_shared<BodyLease>(core_->body_budget);
    if (length && !lease_->GrowTo(static_cast<size_t>(*length))) {
      Reject(503, "too many request bodies in flight; retry shortly", "server_busy",
             {{"Retry-After", "1"}});
      return false;
    }
  }
  if (chunked_body_) {
    guard_.emplace(ChunkedLimits{kMaxChunkLineBytes, core_->opts.max_body_bytes, kMaxTrailerBytes,
                                 kMaxTrailerFields});
    guard_scanned_ = 0;
  }
  if (!expect.empty() && h.version() >= 11 && !parser_->is_done()) {
    Enqueue("HTTP/1.1 100 Continue\r\n\r\n");
  }
  return true;
}

void Connection::Dispatch() {
  auto msg = parser_->release();
  parser_.reset();
  guard_.reset();
  DisarmTimer();
  phase_ = Phase::kResponding;
  reply_ = Reply::kNone;
  ++seq_;
  version_ = msg.version();
  keep_alive_ = msg.keep_alive() && !draining_;
  head_ = msg.method() == bhttp::verb::head;

  Request req = std::move(*head_req_);
  head_req_.reset();
  req.body = std::move(msg.body());
  req.body_lease = std::move(lease_);

  auto res = std::shared_ptr<Responder>(new Responder(shared_from_this(), seq_));
  responder_ = res;
  const uint64_t seq = seq_;
  try {
    core_->handler(std::move(req), std::move(res));
  } catch (const std::exception& e) {
    log::Error("[http] handler threw for {}: {}", remote_, e.what());
    DoSend(seq, 500, {{"Content-Type", "text/plain"}}, "internal server error\n");
  } catch (...) {
    log::Error("[http] handler threw a non-exception for {}", remote_);
    DoSend(seq, 500, {{"Content-Type", "text/plain"}}, "internal server error\n");
  }
  // A half-close that came with the request: find out now whether the client is there.
  if (peer_eof_ && Current(seq)) {
    SendProbe();
    WaitError();
  }
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
  pause_timer_.cancel();
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  // Buffers in flight stay until OnWritten runs; drop the rest now.
  size_t dropped = 0;
  for (size_t i = writing_count_; i < out_.size(); ++i) dropped += out_[i].size();
  out_.erase(out_.begin() + static_cast<ptrdiff_t>(writing_count_), out_.end());
  pending_bytes.fetch_sub(dropped, std::memory_order_relaxed);
  parser_.reset();
  guard_.reset();
  head_req_.reset();
  lease_.reset();
  in_.clear();
  in_.shrink_to_fit();
  core_->Unregister(id_);
  auto responder = responder_.lock();
  responder_.reset();
  if (fire && responder) responder->FireClose();
}

void Connection::BeginLinger() {
  phase_ = Phase::kLingering;
  parser_.reset();
  guard_.reset();
  head_req_.reset();
  lease_.reset();
  in_.clear();
  if (peer_eof_) {  // the client is done sending: nothing to drain
    Close();
    return;
  }
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) {
    Close();
    return;
  }
  ArmTimer(Clock::now() + std::min<Clock::duration>(kLingerTimeout, core_->opts.idle_timeout));
  WaitRead();
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
        Reject(408, "request timeout", "request_timeout");
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

}  // namespace brisk::http::internal
