// "response_format" (structured output), parsed as openai_request.h
// describes: {"type": "text"} (the default), {"type": "json_object"}, or
// {"type": "json_schema", "json_schema": {"name", "schema", "strict",
// "description"}}. On /v1/chat/completions as OpenAI; on /v1/completions as
// an extension. The schema is kept as its JSON text (key order kept: the
// output's member order follows `properties`); compiling it is the
// server's job (request_preparation.cc). Internal to server/.
#pragma once

#include "server/openai_fields.h"
#include "server/openai_request.h"

namespace brisk::api::fields {

// Reads body["response_format"] (absent or null: text) into
// req->response_format. Unknown keys inside it (and its json_schema) are a
// 400 unknown_parameter, as OpenAI answers, or, with `ignored` set
// (server.unknown_request_fields: ignore), skipped and listed there.
Problem ParseResponseFormat(const Json& body, ApiRequest* req, std::vector<std::string>* ignored);

}  // namespace brisk::api::fields
