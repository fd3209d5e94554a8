#include "loadgen/client.h"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace brisk::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

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
  bhttp::request<bhttp::string_body> req{bhttp::verb::post,
                                         o.url.base_path + ApiPath(o.request.api), 11};
  req.set(bhttp::field::host, o.url.host);
  req.set(bhttp::field::content_type, "application/json");
  req.set(bhttp::field::accept, "text/event-stream");
  req.set(bhttp::field::user_agent, "brisk-bench");
  if (!o.api_key.empty()) req.set(bhttp::field::authorization, "Bearer " + o.api_key);
  req.keep_alive(false);
  req.body() = BuildRequestBody(item, o.request);
  req.prepare_payload();

  beast::tcp_stream stream(executor_);
  const Clock::time_point sent = Clock::now();
  r->start_s = SecondsBetween(phase_start, sent);
  stream.expires_after(ToDuration(o.timeout_s));
  auto fail = [&](const char* what, const beast::error_code& ec) {
    r->status = RequestStatus::kError;
    r->error = fmt::format("{}: {}", what, Describe(ec, o.timeout_s));
    r->e2e_s = SecondsBetween(sent, Clock::now());
  };

  auto [connect_ec, endpoint] = co_await stream.async_connect(endpoints_, kNoThrow);
  if (connect_ec) co_return fail("connect", connect_ec);
  auto [write_ec, written] = co_await bhttp::async_write(stream, req, kNoThrow);
  if (write_ec) co_return fail("sending request", write_ec);

  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit(boost::none);
  auto [header_ec, header_bytes] =
      co_await bhttp::async_read_header(stream, buffer, parser, kNoThrow);
  if (header_ec) co_return fail("reading response header", header_ec);
  r->http_status = static_cast<int>(parser.get().result_int());
  const bool streaming = r->http_status == 200;

  OpenAiStream events_in(o.request.api, sent);
  http::SseParser sse;
  std::vector<http::SseEvent> events;
  std::string error_body;
  std::array<char, 16384> chunk;
  beast::error_code read_ec;
  // Read what has arrived, parse, timestamp, repeat: async_read_some returns
  // as soon as the parser makes progress, so each chunk is stamped when it
  // comes off the socket, not when a buffer fills.
  while (!parser.is_done() && !events_in.finished()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    auto [ec, n] = co_await bhttp::async_read_some(stream, buffer, parser, kNoThrow);
    const Clock::time_point now = Clock::now();
    const size_t got = chunk.size() - parser.get().body().size;
    if (streaming) {
      sse.Feed(std::string_view(chunk.data(), got), &events);
      for (const http::SseEvent& e : events) events_in.OnEvent(e, now);
      events.clear();
    } else if (error_body.size() < 300) {
      error_body.append(chunk.data(), std::min(got, 300 - error_body.size()));
    }
    if (ec == bhttp::error::need_buffer) ec = {};
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
    r->e2e_s = SecondsBetween(sent, Clock::now());
    co_return;
  }
  if (read_ec && !events_in.finished()) co_return fail("reading the stream", read_ec);
  if (!events_in.finished()) {
    sse.Finish(&events);
    for (const http::SseEvent& e : events) events_in.OnEvent(e, Clock::now());
  }
  events_in.Complete(item.prompt_tokens_estimate, r);
}

asio::awaitable<Expected<std::pair<int, std::string>>> Client::Get(std::string path) const {
  const ClientOptions& o = options_;
  bhttp::request<bhttp::empty_body> req{bhttp::verb::get, o.url.base_path + path, 11};
  req.set(bhttp::field::host, o.url.host);
  req.set(bhttp::field::user_agent, "brisk-bench");
  if (!o.api_key.empty()) req.set(bhttp::field::authorization, "Bearer " + o.api_key);
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
  auto [write_ec, written] = co_await bhttp::async_write(stream, req, kNoThrow);
  if (write_ec) co_return error("send", write_ec);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 << 20);
  auto [read_ec, read] = co_await bhttp::async_read(stream, buffer, parser, kNoThrow);
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
