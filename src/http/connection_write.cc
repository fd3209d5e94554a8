// The write side of a Connection: response heads, Responder operations, the output queue.
#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/status.hpp>
#include <ctime>
#include <nlohmann/json.hpp>

#include "http/connection.h"
#include "util/log.h"

namespace brisk::http::internal {
namespace {

namespace bhttp = beast::http;

constexpr size_t kMaxBatchBuffers = 64;  // buffers per gathered write

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

}  // namespace

void Connection::Reject(int status, std::string_view text, std::string_view code, Headers extra) {
  // The OpenAI error shape, so API clients can read errors of the HTTP layer too.
  if (code.empty()) {
    code = status == 413   ? "body_too_large"
           : status == 431 ? "header_too_large"
           : status == 408 ? "request_timeout"
                           : "bad_http_request";
  }
  nlohmann::json err = {{"error",
                         {{"message", text},
                          {"type", status >= 500 ? "server_error" : "invalid_request_error"},
                          {"param", nullptr},
                          {"code", code}}}};
  extra.emplace_back("Content-Type", "application/json");
  head_ = false;
  AnswerAndClose(status, std::move(extra),
                 err.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void Connection::AnswerAndClose(int status, Headers headers, std::string body) {
  parser_.reset();
  guard_.reset();
  head_req_.reset();
  lease_.reset();
  in_.clear();
  DisarmTimer();
  phase_ = Phase::kResponding;
  reply_ = Reply::kNone;
  responder_.reset();
  ++seq_;
  keep_alive_ = false;
  if (status < 200 || status > 999) status = 500;
  const bool no_body = status == 204 || status == 304;
  Enqueue(BuildHead(status, headers, no_body ? Framing::kNone : Framing::kLength, body.size()));
  if (!head_ && !no_body) Enqueue(std::move(body));
  reply_ = Reply::kComplete;
  OnReplyComplete();
}

std::string Connection::BuildHead(int status, const Headers& headers, Framing framing,
                                  size_t length) {
  std::string h;
  h.reserve(256);
  fmt::format_to(std::back_inserter(h), "HTTP/1.1 {} {}\r\n", status, Reason(status));
  bool has_date = false, has_server = false, has_cache_control = false;
  for (const auto& [name, value] : headers) {
    if (!ValidHeaderName(name) || !ValidHeaderValue(value)) {
      log::Warn("[http] dropping invalid response header '{}'", name);
      continue;
    }
    if (AsciiIEquals(name, "Content-Length") || AsciiIEquals(name, "Transfer-Encoding")) continue;
    if (AsciiIEquals(name, "Connection")) {
      if (beast::http::token_list(value).exists("close")) keep_alive_ = false;
      continue;
    }
    has_date |= AsciiIEquals(name, "Date");
    has_server |= AsciiIEquals(name, "Server");
    has_cache_control |= AsciiIEquals(name, "Cache-Control");
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
    log::Error("[http] handler sent invalid status {}; answering 500", status);
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
    log::Error("[http] handler started a stream with invalid status {}", status);
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
    log::Warn("[http] {}: stream consumer {} bytes behind; disconnecting", remote_, behind);
    Close();
  }
}

void Connection::DoEnd(uint64_t seq, Headers trailers) {
  if (!Current(seq)) return;
  if (reply_ == Reply::kNone) {  // End() without StartStream(): an empty 200
    DoSend(seq, 200, {}, "");
    return;
  }
  if (reply_ != Reply::kStreaming) return;
  if (chunked_ && !head_) {
    std::string last = "0\r\n";
    for (const auto& [name, value] : trailers)
      last.append(name).append(": ").append(value) += "\r\n";
    Enqueue(last.append("\r\n"));
  }
  reply_ = Reply::kComplete;
  OnReplyComplete();
}

void Connection::OnResponderDropped(uint64_t seq) {
  if (!Current(seq)) return;
  if (reply_ == Reply::kNone) {
    log::Error("[http] {}: handler dropped the request without answering", remote_);
    DoSend(seq, 500, {{"Content-Type", "text/plain"}}, "internal server error: no response\n");
  } else if (reply_ == Reply::kStreaming) {
    log::Warn("[http] {}: stream dropped without End(); closing", remote_);
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

}  // namespace brisk::http::internal
