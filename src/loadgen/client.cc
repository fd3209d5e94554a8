#include "loadgen/client.h"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace brisk::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Completion token: results (error_code first) as a tuple, never an exception.
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::chrono::steady_clock::duration ToDuration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

std::string Describe(const beast::error_code& ec, double timeout_s) {
  if (ec == beast::error::timeout) return fmt::format("timed out after {} s", timeout_s);
  return ec.message();
}

// One line of a non-200 body for the error message.
std::string OneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

std::string ServerUrl::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}{}", v6 ? "[" : "", host, v6 ? "]" : "", port, base_path);
}

Expected<ServerUrl> ParseUrl(std::string_view url) {
  constexpr std::string_view kHttp = "http://";
  if (url.starts_with("https://"))
    return Unimplemented("https is not supported ({}): use http:// to a local server", url);
  if (!url.starts_with(kHttp))
    return InvalidArgument("bad URL '{}': expected http://HOST[:PORT]", url);
  std::string_view rest = url.substr(kHttp.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  ServerUrl out;
  std::string_view port;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("bad IPv6 host in URL '{}'", url);
    out.host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return InvalidArgument("bad URL '{}'", url);
      port = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return InvalidArgument("bad URL '{}': no host", url);
  if (!port.empty()) {
    if (port.find_first_not_of("0123456789") != std::string_view::npos || port.size() > 5)
      return InvalidArgument("bad port '{}' in URL '{}'", port, url);
    out.port = port;
  }
  while (path.ends_with('/')) path.remove_suffix(1);
  // "http://host:8000/v1" is how OpenAI clients spell the base URL; the paths
  // used here already start with /v1.
  if (path.ends_with("/v1")) path.remove_suffix(3);
  out.base_path = path;
  return out;
}

Expected<Client> Client::Create(asio::any_io_executor executor, ClientOptions options) {
  Client c(std::move(executor), std::move(options));
  tcp::resolver resolver(c.executor_);
  beast::error_code ec;
  c.endpoints_ = resolver.resolve(c.options_.url.host, c.options_.url.port, ec);
  if (ec)
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot resolve {}: {}", c.options_.url.host, ec.message()));
  return c;
}

asio::awaitable<void> Client::Stream(const WorkloadItem& item, Clock::time_point phase_start,
                                     RequestRecord* r) const {
  const ClientOptions& o = options_;
  r->max_tokens = item.max_tokens;
  r->prompt_tokens = item.prompt_tokens_estimate;
  http::request<http::string_body> req{http::verb::post, o.url.base_path + ApiPath(o.request.api),
                                       11};
  req.set(http::field::host, o.url.host);
  req.set(http::field::content_type, "application/json");
  req.set(http::field::accept, "text/event-stream");
  req.set(http::field::user_agent, "brisk-bench");
  if (!o.api_key.empty()) req.set(http::field::authorization, "Bearer " + o.api_key);
  req.keep_alive(false);
  req.body() = BuildRequestBody(item, o.request);
  req.prepare_payload();

  beast::tcp_stream stream(executor_);
  const Clock::time_point sent = Clock::now();
  r->start_s = Seconds(phase_start, sent);
  stream.expires_after(ToDuration(o.timeout_s));
  auto fail = [&](const char* what, const beast::error_code& ec) {
    r->status = RequestStatus::kError;
    r->error = fmt::format("{}: {}", what, Describe(ec, o.timeout_s));
    r->e2e_s = Seconds(sent, Clock::now());
  };

  auto [connect_ec, endpoint] = co_await stream.async_connect(endpoints_, kNoThrow);
  if (connect_ec) co_return fail("connect", connect_ec);
  auto [write_ec, written] = co_await http::async_write(stream, req, kNoThrow);
  if (write_ec) co_return fail("sending request", write_ec);

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  auto [header_ec, header_bytes] =
      co_await http::async_read_header(stream, buffer, parser, kNoThrow);
  if (header_ec) co_return fail("reading response header", header_ec);
  r->http_status = static_cast<int>(parser.get().result_int());
  const bool streaming = r->http_status == 200;

  OpenAiStream events_in(o.request.api, sent);
  SseParser sse;
  std::vector<SseEvent> events;
  std::string error_body;
  std::array<char, 16384> chunk;
  beast::error_code read_ec;
  // Read what has arrived, parse, timestamp, repeat: async_read_some returns
  // as soon as the parser makes progress, so each chunk is stamped when it
  // comes off the socket, not when a buffer fills.
  while (!parser.is_done() && !events_in.finished()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, kNoThrow);
    const Clock::time_point now = Clock::now();
    const size_t got = chunk.size() - parser.get().body().size;
    if (streaming) {
      sse.Feed(std::string_view(chunk.data(), got), &events);
      for (const SseEvent& e : events) events_in.OnEvent(e, now);
      events.clear();
    } else if (error_body.size() < 300) {
      error_body.append(chunk.data(), std::min(got, 300 - error_body.size()));
    }
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      read_ec = ec;
      break;
    }
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);

  if (!streaming) {
    r->status = r->http_status == 429 ? RequestStatus::kRejected : RequestStatus::kError;
    r->error = fmt::format("HTTP {}: {}", r->http_status, OneLine(std::move(error_body)));
    r->e2e_s = Seconds(sent, Clock::now());
    co_return;
  }
  if (read_ec && !events_in.finished()) co_return fail("reading the stream", read_ec);
  if (!events_in.finished()) {
    sse.Finish(&events);
    for (const SseEvent& e : events) events_in.OnEvent(e, Clock::now());
  }
  events_in.Complete(item.prompt_tokens_estimate, r);
}

asio::awaitable<Expected<std::pair<int, std::string>>> Client::Get(std::string path) const {
  const ClientOptions& o = options_;
  http::request<http::empty_body> req{http::verb::get, o.url.base_path + path, 11};
  req.set(http::field::host, o.url.host);
  req.set(http::field::user_agent, "brisk-bench");
  if (!o.api_key.empty()) req.set(http::field::authorization, "Bearer " + o.api_key);
  req.keep_alive(false);
  beast::tcp_stream stream(executor_);
  const double timeout_s = std::min(o.timeout_s, 30.0);
  stream.expires_after(ToDuration(timeout_s));
  auto error = [&](const char* what, const beast::error_code& ec) {
    return Status(StatusCode::kUnavailable, fmt::format("GET {}{}: {}: {}", o.url.ToString(), path,
                                                        what, Describe(ec, timeout_s)));
  };
  auto [connect_ec, endpoint] = co_await stream.async_connect(endpoints_, kNoThrow);
  if (connect_ec) co_return error("connect", connect_ec);
  auto [write_ec, written] = co_await http::async_write(stream, req, kNoThrow);
  if (write_ec) co_return error("send", write_ec);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  auto [read_ec, read] = co_await http::async_read(stream, buffer, parser, kNoThrow);
  if (read_ec) co_return error("read", read_ec);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return std::make_pair(static_cast<int>(parser.get().result_int()),
                           std::move(parser.get().body()));
}

Expected<std::string> ParseFirstModelId(std::string_view models_json) {
  using json = nlohmann::json;
  json j = json::parse(models_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    auto data = j.find("data");
    if (data != j.end() && data->is_array() && !data->empty() && (*data)[0].is_object()) {
      auto id = (*data)[0].find("id");
      if (id != (*data)[0].end() && id->is_string()) return id->get<std::string>();
    }
  }
  return InvalidArgument("no model id in the /v1/models answer: {}", models_json.substr(0, 200));
}

}  // namespace brisk::loadgen
