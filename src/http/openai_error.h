// The one writer of OpenAI-shaped errors, for every server in the process
// (the front door, the gateway, its admin API, the header gate):
//
//   {"error": {"message": "...", "type": "...", "param": null, "code": "..."}}
//
// with Content-Type: application/json. An empty param or code is sent as null,
// as OpenAI does.
#pragma once

#include <string>

#include "http/headers.h"
#include "http/server.h"

namespace brisk::http {

struct OpenAiError {
  int http_status = 400;
  std::string type = "invalid_request_error";  // "server_error" for 5xx, "rate_limit_error"...
  std::string message;
  std::string param;  // "" is sent as null
  std::string code;   // "" is sent as null
};

// The body, as one JSON object (invalid UTF-8 in the message is replaced).
std::string OpenAiErrorBody(const OpenAiError& e);
// The same as one server-sent event ("data: {...}\n\n"), for a stream that already started.
std::string OpenAiErrorEvent(const OpenAiError& e);
// An error with these fields.
OpenAiError MakeOpenAiError(int http_status, std::string type, std::string message,
                            std::string code = "", std::string param = "");
// Sends `e` with Content-Type: application/json after `extra`.
void SendOpenAiError(Responder& res, const OpenAiError& e, Headers extra = {});
// Sends MakeOpenAiError(http_status, type, message, code, param).
void SendOpenAiError(Responder& res, int http_status, std::string type, std::string message,
                     std::string code = "", std::string param = "");
// `e` as an answer before the body is read (ServerOptions::on_headers).
EarlyResponse OpenAiErrorResponse(const OpenAiError& e, Headers extra = {});

}  // namespace brisk::http
