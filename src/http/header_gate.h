// Checks a request can pass on its header section alone, before its body is read: the pure
// function behind http::ServerOptions::on_headers for the OpenAI front door.
//
//   opts.on_headers = [cfg](const http::Request& head) { return CheckHeaders(cfg, head); };
//
// In order, the first failure answers (errors in OpenAI's shape,
// {"error": {"message", "type", "param", "code"}}, Content-Type: application/json):
//   1. Host not in allowed_hosts (when not empty) ........ 421 host_not_allowed
//   2. path not a route ................................. 404 not_found
//      method not one of the route's ................... 405 method_not_allowed (+ Allow)
//   3. route needs a key, keys are configured, and
//      Authorization presents none (ResolveCaller) ..... 401 invalid_api_key
//   4. route takes a JSON body (POST) and Content-Type is
//      not application/json (parameters such as charset
//      allowed; any case) ............................. 415 unsupported_media_type
// (1) and (4) stop browsers: a web page can send a "simple" cross-origin POST (text/plain,
// form, multipart) without a preflight, and a DNS-rebinding page names its own host.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/caller_identity.h"
#include "http/route_table.h"
#include "http/server.h"

namespace brisk {

struct HeaderGateConfig {
  http::RouteTable routes;                 // empty: no method/path check
  std::vector<std::string> allowed_hosts;  // empty: any Host (see http::HostAllowed)
  std::vector<ApiKeyConfig> keys;          // empty: no keys configured, nothing needs one
};

std::optional<http::EarlyResponse> CheckHeaders(const HeaderGateConfig& cfg,
                                                const http::Request& head);

// "application/json", "Application/JSON; charset=utf-8": true. "application/jsonx",
// "text/plain", "": false.
bool IsJsonContentType(std::string_view content_type);

}  // namespace brisk
