#include "http/route_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "http/openai_error.h"

namespace brisk::http {

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

const Route* RouteTable::Find(std::string_view path) const {
  const Route* found = nullptr;
  for (const Route& r : routes_)
    if (RouteMatches(r.path, path)) found = &r;
  return found;
}

std::optional<EarlyResponse> RouteTable::Refusal(const Request& head) const {
  const Route* route = Find(head.path);
  if (!route) {
    std::vector<std::string_view> paths;
    for (const Route& r : routes_) paths.push_back(r.path);
    return OpenAiErrorResponse(MakeOpenAiError(
        404, "invalid_request_error",
        fmt::format("Unknown path {} (see {})", head.path.substr(0, 200), fmt::join(paths, ", ")),
        "not_found"));
  }
  if (std::find(route->methods.begin(), route->methods.end(), head.method) ==
      route->methods.end()) {
    return OpenAiErrorResponse(
        MakeOpenAiError(405, "invalid_request_error",
                        fmt::format("Method {} not allowed on {}", head.method.substr(0, 32),
                                    head.path.substr(0, 200)),
                        "method_not_allowed"),
        {{"Allow", fmt::format("{}", fmt::join(route->methods, ", "))}});
  }
  return std::nullopt;
}

void RouteTable::Dispatch(Request&& req, std::shared_ptr<Responder> res) const {
  if (auto refusal = Refusal(req)) {
    return res->Send(refusal->status, std::move(refusal->headers), std::move(refusal->body));
  }
  const Route* route = Find(req.path);
  if (!route->handler) {
    return SendOpenAiError(*res, 500, "server_error", "no handler for " + req.path.substr(0, 200),
                           "internal_error");
  }
  route->handler(std::move(req), std::move(res));
}

}  // namespace brisk::http
