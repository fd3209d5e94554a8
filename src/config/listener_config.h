// The HTTP listener of a server process: the `server:` keys that `brisk serve`
// (inference.yaml) and `brisk gateway` (gateway.yaml) share, read by one set
// of YAML fields and turned into http::ServerOptions by one function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config_yaml.h"
#include "http/server.h"

namespace brisk {

struct ListenerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0 = pick a free port
  int http_threads = 1;
  int64_t max_body_bytes = int64_t{4} << 20;  // YAML: integer or size with unit
  double request_timeout_s = 10;              // reading one request (headers + body)
  double idle_timeout_s = 60;                 // keep-alive connection with no request
  int max_connections = 10000;
  bool operator==(const ListenerConfig&) const = default;
};

// The listener's options; the others keep http::ServerOptions' defaults.
http::ServerOptions ServerOptionsOf(const ListenerConfig& listener);

// The YAML fields of a listener (host, port, http_threads, max_body_bytes,
// request_timeout_s, idle_timeout_s, max_connections), for a `server:` section.
std::vector<config_yaml::Field> ListenerFields(const config_yaml::Reader& r,
                                               ListenerConfig& listener);

}  // namespace brisk
