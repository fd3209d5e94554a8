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
//   3. route needs a key, key_ok is set, and the
//      Authorization header has no accepted Bearer token 401 invalid_api_key
//   4. route takes a JSON body (POST) and Content-Type is
//      not application/json (parameters such as charset
//      allowed; any case) ............................. 415 unsupported_media_type
// (1) and (4) stop browsers: a web page can send a "simple" cross-origin POST (text/plain,
// form, multipart) without a preflight, and a DNS-rebinding page names its own host.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/server.h"

namespace brisk {

struct GateRoute {
  std::string path;                  // exact, as in http::Request::path (see RouteMatches)
  std::vector<std::string> methods;  // e.g. {"GET", "HEAD"}
  bool json_body = false;            // requires Content-Type: application/json
  bool needs_key = true;             // when keys are configured
};

struct HeaderGateConfig {
  std::vector<GateRoute> routes;           // empty: no method/path check
  std::vector<std::string> allowed_hosts;  // empty: any Host (see http::HostAllowed)
  // Accepts a bearer token; empty: no keys configured, nothing needs one.
  std::function<bool(std::string_view token)> key_ok;
};

std::optional<http::EarlyResponse> CheckHeaders(const HeaderGateConfig& cfg,
                                                const http::Request& head);

// Whether a request path is a route's: the same path, or, for a route path ending in '/'
// ("/v1/responses/"), that prefix followed by one non-empty segment without '/'
// ("/v1/responses/resp_1", not "/v1/responses/" nor "/v1/responses/a/b"); for a route
// path with "{}" ("/v1/responses/{}/input_items"), one such segment in its place.
bool RouteMatches(std::string_view route_path, std::string_view path);

// A key_ok accepting exactly these keys (compared in time independent of where they differ);
// an empty list gives an empty function (no keys configured).
std::function<bool(std::string_view)> KeyListChecker(std::vector<std::string> keys);

// "application/json", "Application/JSON; charset=utf-8": true. "application/jsonx",
// "text/plain", "": false.
bool IsJsonContentType(std::string_view content_type);

// The token of "Bearer <token>" (scheme in any case, one or more spaces); nullopt otherwise.
std::optional<std::string_view> BearerToken(std::string_view authorization);

// {"error":{"message":...,"type":...,"param":null,"code":...}} as an EarlyResponse.
http::EarlyResponse GateError(int status, std::string_view type, std::string_view message,
                              std::string_view code, http::Headers extra = {});

}  // namespace brisk
