#include "obs/span_exporter.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "util/log.h"

namespace brisk {
namespace {

using SpanJson = nlohmann::json;

constexpr size_t kBatch = 256;

template <typename... Args>
Status Unreachable(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kUnavailable, fmt::format(f, std::forward<Args>(args)...));
}

std::string UnixNanos(std::chrono::system_clock::time_point t) {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

std::chrono::system_clock::time_point Plus(std::chrono::system_clock::time_point t, double ms) {
  return t + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                 std::chrono::duration<double, std::milli>(ms));
}

SpanJson StringAttr(std::string_view key, std::string_view value) {
  return {{"key", key}, {"value", {{"stringValue", value}}}};
}

// Closes the descriptor on every path.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string OtlpTracesJson(std::string_view service_name, const std::vector<RequestSpan>& spans) {
  SpanJson list = SpanJson::array();
  for (const RequestSpan& r : spans) {
    SpanJson attrs = SpanJson::array();
    for (const auto& [k, v] : r.attributes) attrs.push_back(StringAttr(k, v));
    attrs.push_back({{"key", "http.response.status_code"},
                     {"value", {{"intValue", std::to_string(r.http_status)}}}});
    SpanJson span = {{"traceId", r.trace.trace_id},
                     {"spanId", r.trace.span_id},
                     {"name", r.name},
                     {"kind", 2},  // SPAN_KIND_SERVER
                     {"startTimeUnixNano", UnixNanos(r.start)},
                     {"endTimeUnixNano", UnixNanos(Plus(r.start, r.total_ms))},
                     {"attributes", std::move(attrs)},
                     {"status", {{"code", r.http_status >= 500 ? 2 : 0}}}};
    if (!r.trace.parent_span_id.empty()) span["parentSpanId"] = r.trace.parent_span_id;
    list.push_back(std::move(span));
    // Stages: contiguous children from the request's start.
    double at_ms = 0;
    for (const TimedStage& s : r.stages) {
      list.push_back({{"traceId", r.trace.trace_id},
                      {"spanId", NewSpanId()},
                      {"parentSpanId", r.trace.span_id},
                      {"name", s.name},
                      {"kind", 1},  // SPAN_KIND_INTERNAL
                      {"startTimeUnixNano", UnixNanos(Plus(r.start, at_ms))},
                      {"endTimeUnixNano", UnixNanos(Plus(r.start, at_ms + s.ms))},
                      {"attributes", SpanJson::array({StringAttr("brisk.stage", s.name)})}});
      at_ms += s.ms;
    }
  }
  SpanJson body = {
      {"resourceSpans",
       SpanJson::array(
           {{{"resource",
              {{"attributes", SpanJson::array({StringAttr("service.name", service_name)})}}},
             {"scopeSpans",
              SpanJson::array({{{"scope", {{"name", "brisk"}}}, {"spans", std::move(list)}}})}}})}};
  return body.dump(-1, ' ', false, SpanJson::error_handler_t::replace);
}

Expected<std::unique_ptr<SpanExporter>> SpanExporter::Create(std::string_view endpoint,
                                                             std::string service_name,
                                                             metrics::Registry& registry) {
  constexpr std::string_view kScheme = "http://";
  if (!endpoint.starts_with(kScheme))
    return InvalidArgument("otlp_endpoint '{}': expected http://host:port[/base]", endpoint);
  std::string_view rest = endpoint.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string base(slash == std::string_view::npos ? "" : rest.substr(slash));
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string host(authority), port = "80";
  if (const size_t colon = authority.rfind(':');
      colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    host = std::string(authority.substr(0, colon));
    port = std::string(authority.substr(colon + 1));
    int p = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || ptr != port.data() + port.size() || p <= 0 || p > 65535)
      return InvalidArgument("otlp_endpoint '{}': bad port", endpoint);
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) return InvalidArgument("otlp_endpoint '{}': no host", endpoint);
  return std::unique_ptr<SpanExporter>(new SpanExporter(
      std::move(host), std::move(port), base + "/v1/traces", std::move(service_name), registry));
}

SpanExporter::SpanExporter(std::string host, std::string port, std::string path,
                           std::string service_name, metrics::Registry& registry)
    : host_(std::move(host)),
      port_(std::move(port)),
      path_(std::move(path)),
      service_name_(std::move(service_name)),
      exported_(registry.GetCounter("brisk_otlp_spans_exported_total",
                                    "Request spans (with their stage spans) sent to the OTLP "
                                    "collector.")),
      dropped_(registry.GetCounter("brisk_otlp_spans_dropped_total",
                                   "Request spans dropped: export queue full or collector "
                                   "unreachable.")) {
  worker_ = std::thread([this] { Run(); });
}

SpanExporter::~SpanExporter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void SpanExporter::Export(RequestSpan span) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= kMaxQueued || stop_) {
      dropped_->Inc();
      return;
    }
    queue_.push_back(std::move(span));
  }
  cv_.notify_one();
}

void SpanExporter::Run() {
  const auto stop_deadline_after = std::chrono::seconds(2);
  std::optional<std::chrono::steady_clock::time_point> give_up;
  for (;;) {
    std::vector<RequestSpan> batch;
    {
      std::unique_lock lock(mu_);
      // A short wait gathers a batch under load; an idle exporter sleeps.
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      if (stop_ && !give_up) give_up = std::chrono::steady_clock::now() + stop_deadline_after;
      if (give_up && std::chrono::steady_clock::now() > *give_up) {
        dropped_->Inc(static_cast<double>(queue_.size()));
        queue_.clear();
        return;
      }
      while (!queue_.empty() && batch.size() < kBatch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    const Status st = Post(OtlpTracesJson(service_name_, batch));
    if (st.ok()) {
      exported_->Inc(static_cast<double>(batch.size()));
      continue;
    }
    dropped_->Inc(static_cast<double>(batch.size()));
    const auto now = std::chrono::steady_clock::now();
    if (now - last_warning_ > std::chrono::seconds(30)) {
      last_warning_ = now;
      log::Warn("OTLP export to http://{}:{}{} failed ({} spans dropped): {}", host_, port_, path_,
                batch.size(), st.message());
    }
  }
}

Status SpanExporter::Post(const std::string& body) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host_.c_str(), port_.c_str(), &hints, &res); rc != 0)
    return Unreachable("resolving {}: {}", host_, ::gai_strerror(rc));
  Fd sock;
  std::string last_error = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    Fd s{::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol)};
    if (s.fd < 0) continue;
    // Bounds connect, each send and each receive: a stuck collector delays
    // only this thread, and only this long.
    timeval tv{5, 0};
    ::setsockopt(s.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ::setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(s.fd, a->ai_addr, a->ai_addrlen) == 0) {
      std::swap(sock.fd, s.fd);
      break;
    }
    last_error = std::strerror(errno);
  }
  ::freeaddrinfo(res);
  if (sock.fd < 0) return Unreachable("connecting to {}:{}: {}", host_, port_, last_error);
  std::string req = fmt::format(
      "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\nConnection: close\r\nUser-Agent: brisk\r\n\r\n",
      path_, host_, port_, body.size());
  req += body;
  for (size_t sent = 0; sent < req.size();) {
    const ssize_t n = ::send(sock.fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return Unreachable("sending to the collector: {}", std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  // The status line is all we need ("HTTP/1.1 200 ..."), but the answer is
  // read to its end (Connection: close), at most 64 KiB, so that the
  // collector is not cut off mid-write.
  std::string head;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(sock.fd, buf, sizeof buf, 0);
    if (n < 0 && head.find("\r\n") != std::string::npos) break;  // kept open: status is enough
    if (n < 0) return Unreachable("reading the collector's answer: {}", std::strerror(errno));
    if (n == 0 || head.size() > (64 << 10)) break;
    head.append(buf, static_cast<size_t>(n));
  }
  if (head.size() < 12 || !head.starts_with("HTTP/1.")) return Unreachable("not an HTTP answer");
  const int status = std::atoi(head.c_str() + 9);
  if (status < 200 || status > 299) return Unreachable("the collector answered HTTP {}", status);
  return Status::Ok();
}

}  // namespace brisk
