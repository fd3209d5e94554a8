#include "http/openai_error.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace brisk::http {

namespace {

nlohmann::ordered_json OrNull(const std::string& s) {
  return s.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s);
}

}  // namespace

std::string OpenAiErrorBody(const OpenAiError& e) {
  nlohmann::ordered_json err = {{"message", e.message},
                                {"type", e.type},
                                {"param", OrNull(e.param)},
                                {"code", OrNull(e.code)}};
  return nlohmann::ordered_json{{"error", std::move(err)}}.dump(
      -1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string OpenAiErrorEvent(const OpenAiError& e) {
  return "data: " + OpenAiErrorBody(e) + "\n\n";
}

OpenAiError MakeOpenAiError(int http_status, std::string type, std::string message,
                            std::string code, std::string param) {
  OpenAiError e;
  e.http_status = http_status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.code = std::move(code);
  e.param = std::move(param);
  return e;
}

void SendOpenAiError(Responder& res, int http_status, std::string type, std::string message,
                     std::string code, std::string param) {
  SendOpenAiError(res, MakeOpenAiError(http_status, std::move(type), std::move(message),
                                       std::move(code), std::move(param)));
}

void SendOpenAiError(Responder& res, const OpenAiError& e, Headers extra) {
  extra.emplace_back("Content-Type", "application/json");
  res.Send(e.http_status, std::move(extra), OpenAiErrorBody(e));
}

EarlyResponse OpenAiErrorResponse(const OpenAiError& e, Headers extra) {
  EarlyResponse r;
  r.status = e.http_status;
  r.headers = std::move(extra);
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = OpenAiErrorBody(e);
  return r;
}

}  // namespace brisk::http
