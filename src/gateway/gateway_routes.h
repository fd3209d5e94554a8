// The gateway's route table (the header gate reads it before a body, the
// dispatch after) and its one writer of JSON answers.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "gateway/gateway_core.h"
#include "http/route_table.h"
#include "http/server.h"

namespace brisk::gateway {

// Every route of `brisk gateway`. Handlers hold the core weakly: a request
// that arrives while the gateway stops gets a 503.
http::RouteTable Routes(const std::shared_ptr<GatewayCore>& core);

// `body` as application/json (invalid UTF-8 replaced), with `extra` headers.
void SendJson(http::Responder& res, int status, const nlohmann::json& body,
              http::Headers extra = {});

}  // namespace brisk::gateway
