#include "http/header_gate.h"

#include <fmt/format.h>

#include <algorithm>

#include "http/headers.h"
#include "http/host.h"

namespace brisk {

bool IsJsonContentType(std::string_view content_type) {
  std::string_view media = http::TrimOws(content_type.substr(0, content_type.find(';')));
  return http::AsciiIEquals(media, "application/json");
}

std::optional<http::EarlyResponse> CheckHeaders(const HeaderGateConfig& cfg,
                                                const http::Request& head) {
  // 1. Host: a page on another origin, rebound to this address, still names its own host.
  if (!cfg.allowed_hosts.empty()) {
    const std::string_view host = head.Header("Host");
    if (!host.empty() && !http::HostAllowed(host, cfg.allowed_hosts)) {
      return http::OpenAiErrorResponse(http::MakeOpenAiError(
          421, "invalid_request_error",
          fmt::format("Host '{}' is not served here; allowed: {}", host.substr(0, 200),
                      fmt::join(cfg.allowed_hosts, ", ")),
          "host_not_allowed"));
    }
  }

  // 2. Method and path.
  const http::Route* route = nullptr;
  if (!cfg.routes.empty()) {
    if (auto refusal = cfg.routes.Refusal(head)) return refusal;
    route = cfg.routes.Find(head.path);
  }

  // 3. The API key, before any body byte is read.
  if (!cfg.keys.empty() && (!route || route->needs_key)) {
    const std::string_view auth = head.Header("Authorization");
    if (!ResolveCaller(cfg.keys, auth)) return http::OpenAiErrorResponse(UnauthorizedError(auth));
  }

  // 4. Only JSON: a browser's no-preflight POST (text/plain, form, multipart) stops here.
  if (route && route->json_body) {
    const std::string_view type = head.Header("Content-Type");
    if (!IsJsonContentType(type)) {
      return http::OpenAiErrorResponse(http::MakeOpenAiError(
          415, "invalid_request_error",
          type.empty()
              ? std::string("Content-Type: application/json is required")
              : fmt::format("Content-Type must be application/json, not '{}'", type.substr(0, 100)),
          "unsupported_media_type"));
    }
  }
  return std::nullopt;
}

}  // namespace brisk
