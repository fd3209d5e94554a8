// How a client request enters the gateway, for its .cc files: Admit routes it,
// reserves its budget and starts its ProxiedRequest (gateway_server.cc); the
// Responses API's requests first pass AdmitResponses, and its stored objects
// are read by ResponseById (gateway_responses.cc).
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "gateway/gateway_core.h"
#include "gateway/proxied_request.h"
#include "http/server.h"

namespace brisk::gateway {

void Admit(const std::shared_ptr<GatewayCore>& core, Endpoint endpoint, nlohmann::json body,
           Caller caller, std::shared_ptr<http::Responder> res,
           std::chrono::steady_clock::time_point arrival,
           std::shared_ptr<const ResponsesTurn> turn);

// A Responses API body: its turn (the input as items, the stored
// conversation it continues) and the body the engine gets (the whole
// conversation as input, no previous_response_id). Reads the database when
// there is a previous response: call it on a database thread then.
void AdmitResponses(const std::shared_ptr<GatewayCore>& core, nlohmann::json body, Caller caller,
                    std::shared_ptr<http::Responder> res,
                    std::chrono::steady_clock::time_point arrival);

// GET / DELETE /v1/responses/{id} and GET /v1/responses/{id}/input_items, from
// the shared store, for the caller's tenant. On a database thread.
void ResponseById(const std::shared_ptr<GatewayCore>& core, const http::Request& req,
                  http::Responder& res);

}  // namespace brisk::gateway
