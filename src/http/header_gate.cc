#include "http/header_gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "http/host.h"
#include "util/constant_time.h"

namespace brisk {
namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return Lower(x) == Lower(y); });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool RouteMatches(std::string_view route_path, std::string_view path) {
  if (const size_t hole = route_path.find("{}"); hole != std::string_view::npos) {
    const std::string_view prefix = route_path.substr(0, hole);
    const std::string_view suffix = route_path.substr(hole + 2);
    if (path.size() <= prefix.size() + suffix.size() || !path.starts_with(prefix) ||
        !path.ends_with(suffix))
      return false;
    const std::string_view segment =
        path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
    return segment.find('/') == std::string_view::npos;
  }
  if (route_path.empty() || route_path.back() != '/') return route_path == path;
  if (path.size() <= route_path.size() || path.substr(0, route_path.size()) != route_path)
    return false;
  return path.find('/', route_path.size()) == std::string_view::npos;
}

bool IsJsonContentType(std::string_view content_type) {
  std::string_view media = Trim(content_type.substr(0, content_type.find(';')));
  return IEquals(media, "application/json");
}

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  authorization = Trim(authorization);
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() ||
      !IEquals(authorization.substr(0, kScheme.size()), kScheme) ||
      (authorization[kScheme.size()] != ' ' && authorization[kScheme.size()] != '\t')) {
    return std::nullopt;
  }
  std::string_view token = Trim(authorization.substr(kScheme.size()));
  if (token.empty()) return std::nullopt;
  return token;
}

http::EarlyResponse GateError(int status, std::string_view type, std::string_view message,
                              std::string_view code, http::Headers extra) {
  nlohmann::json err = {
      {"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}};
  http::EarlyResponse r;
  r.status = status;
  r.headers = std::move(extra);
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = err.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

std::function<bool(std::string_view)> KeyListChecker(std::vector<std::string> keys) {
  if (keys.empty()) return {};
  return [keys = std::move(keys)](std::string_view token) {
    bool ok = false;
    for (const auto& k : keys) ok |= ConstantTimeEquals(token, k);  // no early exit
    return ok;
  };
}

std::optional<http::EarlyResponse> CheckHeaders(const HeaderGateConfig& cfg,
                                                const http::Request& head) {
  // 1. Host: a page on another origin, rebound to this address, still names its own host.
  if (!cfg.allowed_hosts.empty()) {
    const std::string_view host = head.Header("Host");
    if (!host.empty() && !http::HostAllowed(host, cfg.allowed_hosts)) {
      return GateError(421, "invalid_request_error",
                       fmt::format("Host '{}' is not served here; allowed: {}", host.substr(0, 200),
                                   fmt::join(cfg.allowed_hosts, ", ")),
                       "host_not_allowed");
    }
  }

  // 2. Method and path.
  const GateRoute* route = nullptr;
  if (!cfg.routes.empty()) {
    for (const auto& r : cfg.routes) {
      if (RouteMatches(r.path, head.path)) route = &r;
    }
    if (!route) {
      std::vector<std::string_view> paths;
      for (const auto& r : cfg.routes) paths.push_back(r.path);
      return GateError(
          404, "invalid_request_error",
          fmt::format("Unknown path {} (see {})", head.path.substr(0, 200), fmt::join(paths, ", ")),
          "not_found");
    }
    if (std::find(route->methods.begin(), route->methods.end(), head.method) ==
        route->methods.end()) {
      return GateError(
          405, "invalid_request_error",
          fmt::format("Method {} not allowed on {}", head.method.substr(0, 32), head.path),
          "method_not_allowed", {{"Allow", fmt::format("{}", fmt::join(route->methods, ", "))}});
    }
  }

  // 3. The API key, before any body byte is read.
  if (cfg.key_ok && (!route || route->needs_key)) {
    const std::string_view auth = head.Header("Authorization");
    const auto token = BearerToken(auth);
    if (!token || !cfg.key_ok(*token)) {
      return GateError(401, "invalid_request_error",
                       auth.empty() ? "Missing API key: send Authorization: Bearer <key>"
                                    : "Incorrect API key provided",
                       "invalid_api_key");
    }
  }

  // 4. Only JSON: a browser's no-preflight POST (text/plain, form, multipart) stops here.
  if (route && route->json_body) {
    const std::string_view type = head.Header("Content-Type");
    if (!IsJsonContentType(type)) {
      return GateError(415, "invalid_request_error",
                       type.empty() ? std::string("Content-Type: application/json is required")
                                    : fmt::format("Content-Type must be application/json, not "
                                                  "'{}'",
                                                  type.substr(0, 100)),
                       "unsupported_media_type");
    }
  }
  return std::nullopt;
}

}  // namespace brisk
