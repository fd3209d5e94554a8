// The HTTP side of the load generator: Boost.Beast HTTP/1.1 over Asio C++20
// coroutines, one connection per request (Connection: close), so an in-flight
// request is exactly an open connection. Nothing here throws: transport
// failures become RequestRecord errors or Status values.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <string>

#include "http/url.h"
#include "loadgen/openai_stream.h"
#include "loadgen/request_record.h"
#include "loadgen/workload.h"
#include "util/status.h"

namespace brisk::loadgen {

// Completion token: results (error_code first) as a tuple, never an exception.
inline constexpr auto kNoThrow = boost::asio::as_tuple(boost::asio::use_awaitable);

struct ClientOptions {
  http::ServerUrl url;
  std::string api_key;     // sent as "Authorization: Bearer <key>" when set
  double timeout_s = 300;  // whole request: connect to end of stream
  RequestOptions request;
};

class Client {
 public:
  // Resolves the host once; requests reuse the endpoints.
  static Expected<Client> Create(boost::asio::any_io_executor executor, ClientOptions options);

  // Sends one streaming request and fills `r` (everything except index and
  // scheduled_s). `phase_start` is the zero of r->start_s.
  boost::asio::awaitable<void> Stream(const WorkloadItem& item, Clock::time_point phase_start,
                                      RequestRecord* r) const;

  // GET path -> {HTTP status, body}; transport errors as a Status.
  boost::asio::awaitable<Expected<std::pair<int, std::string>>> Get(std::string path) const;

  const ClientOptions& options() const { return options_; }
  void set_model(std::string model) { options_.request.model = std::move(model); }

 private:
  Client(boost::asio::any_io_executor executor, ClientOptions options)
      : executor_(std::move(executor)), options_(std::move(options)) {}

  boost::asio::any_io_executor executor_;
  ClientOptions options_;
  boost::asio::ip::tcp::resolver::results_type endpoints_;
};

// The first model id listed by GET /v1/models.
Expected<std::string> ParseFirstModelId(std::string_view models_json);

}  // namespace brisk::loadgen
