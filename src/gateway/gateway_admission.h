// How a client request enters the gateway, for its .cc files: HandleGenerate
// reads it, Admit routes it,
// reserves its budget and starts its ProxiedRequest (gateway_server.cc); the
// Responses API's requests first pass AdmitResponses, and its stored objects
// are read by ResponseById (gateway_responses.cc).
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "gateway/gateway_core.h"
#include "gateway/proxied_request.h"
#include "http/server.h"

namespace brisk::gateway {

// POST /v1/chat/completions, /v1/completions, /v1/responses, /tokenize,
// /detokenize: the caller, the body's checks, then Admit (or AdmitResponses).
void HandleGenerate(const std::shared_ptr<GatewayCore>& core, Endpoint endpoint,
                    http::Request&& req, std::shared_ptr<http::Responder> res);

// Every model id the gateway answers to, in /v1/models order: the router's
// ("auto", each tier's name and configured model id), then each tier's id
// learnt from its upstreams; with the tier index a learnt id routes to (-1
// for the router's own).
std::vector<std::pair<std::string, int>> AdvertisedModels(GatewayCore& core);

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
