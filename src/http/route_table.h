// The routes of one server, in one table that both halves of a request's path
// read: the header gate (http/header_gate.h) before the body (404 for an
// unknown path, 405 for a method the route lacks, which routes need a key,
// which take a JSON body) and Dispatch after it (the route's handler). `brisk
// serve` and `brisk gateway` each build one.
//
//   RouteTable routes({{"/health", {"GET", "HEAD"}, false, false, Health},
//                      {"/v1/chat/completions", {"POST"}, true, true, Chat}});
//   routes.Dispatch(std::move(req), std::move(res));
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/server.h"

namespace brisk::http {

using RouteHandler = std::function<void(Request&&, std::shared_ptr<Responder>)>;

struct Route {
  std::string path;                  // exact, or a pattern (see RouteMatches)
  std::vector<std::string> methods;  // e.g. {"GET", "HEAD"}
  bool json_body = false;            // requires Content-Type: application/json (else 415)
  bool needs_key = true;             // when keys are configured (else 401)
  RouteHandler handler;              // empty in a table only the header gate reads
};

// Whether a request path is a route's: the same path, or, for a route path ending in '/'
// ("/v1/responses/"), that prefix followed by one non-empty segment without '/'
// ("/v1/responses/resp_1", not "/v1/responses/" nor "/v1/responses/a/b"); for a route
// path with "{}" ("/v1/responses/{}/input_items"), one such segment in its place.
bool RouteMatches(std::string_view route_path, std::string_view path);

class RouteTable {
 public:
  RouteTable() = default;
  RouteTable(std::initializer_list<Route> routes) : routes_(routes) {}
  explicit RouteTable(std::vector<Route> routes) : routes_(std::move(routes)) {}

  void Add(Route route) { routes_.push_back(std::move(route)); }
  bool empty() const { return routes_.empty(); }
  const std::vector<Route>& routes() const { return routes_; }

  // The route whose path matches `path` (the last one added, where several do), or null.
  const Route* Find(std::string_view path) const;
  // The answer to a request no route takes: 404 not_found (naming the paths there are) or
  // 405 method_not_allowed (with Allow), in OpenAI's error shape; nullopt when one takes it.
  std::optional<EarlyResponse> Refusal(const Request& head) const;
  // Calls the handler of the route that takes `req`; sends Refusal's answer when none does.
  void Dispatch(Request&& req, std::shared_ptr<Responder> res) const;

 private:
  std::vector<Route> routes_;
};

}  // namespace brisk::http
