#include "config/listener_config.h"

#include <chrono>

namespace brisk {

http::ServerOptions ServerOptionsOf(const ListenerConfig& l) {
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  http::ServerOptions o;
  o.host = l.host;
  o.port = l.port;
  o.io_threads = l.http_threads;
  o.max_body_bytes = static_cast<size_t>(l.max_body_bytes);
  o.request_timeout = ms(l.request_timeout_s);
  o.idle_timeout = ms(l.idle_timeout_s);
  o.max_connections = l.max_connections;
  return o;
}

std::vector<config_yaml::Field> ListenerFields(const config_yaml::Reader& r, ListenerConfig& l) {
  constexpr double kDay = 86400;
  return {
      {"host", r.String(&l.host, false)},
      {"port", r.Int(&l.port, 0, 65535)},
      {"http_threads", r.Int(&l.http_threads, 1, 1024)},
      {"max_body_bytes", r.Bytes(&l.max_body_bytes, int64_t{1} << 30)},
      {"request_timeout_s", r.Seconds(&l.request_timeout_s, true, kDay)},
      {"idle_timeout_s", r.Seconds(&l.idle_timeout_s, true, kDay)},
      {"max_connections", r.Int(&l.max_connections, 1, 1000000)},
  };
}

}  // namespace brisk
