#include "gateway/canned_upstream.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "gateway/json_fields.h"

namespace brisk::gateway {

using Json = nlohmann::json;

namespace {

void Answer(const CannedUpstreamOptions& o, http::Request&& req,
            std::shared_ptr<http::Responder> res) {
  const http::Headers json = {{"Content-Type", "application/json"}};
  if (req.path == "/health" || req.path == "/ready")
    return res->Send(200, json, R"({"status":"ok"})");
  if (req.path == "/load") {
    return res->Send(200, json, R"({"waiting":0,"running":0,"kv_fill":0})");
  }
  if (req.path == "/v1/models") {
    return res->Send(200, json,
                     fmt::format(R"({{"object":"list","data":[{{"id":"{}","object":"model",)"
                                 R"("created":0,"owned_by":"canned"}}]}})",
                                 o.model));
  }
  const bool chat = req.path == "/v1/chat/completions";
  if (!chat && req.path != "/v1/completions") {
    return res->Send(404, json,
                     R"({"error":{"message":"no such route","type":"invalid_request_error"}})");
  }
  Json body = Json::parse(req.body, nullptr, false);
  if (!body.is_object()) {
    return res->Send(400, json,
                     R"({"error":{"message":"bad JSON","type":"invalid_request_error"}})");
  }
  const int n = static_cast<int>(std::clamp<int64_t>(IntOr(body, "max_tokens", 16), 1, 4096));
  const bool stream = BoolOr(body, "stream", false);
  const int64_t prompt = static_cast<int64_t>(req.body.size() / 4);
  const Json usage = {{"prompt_tokens", prompt},
                      {"completion_tokens", n},
                      {"total_tokens", prompt + n},
                      {"prompt_tokens_details", {{"cached_tokens", 0}}}};
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  if (!stream) {
    std::string text;
    for (int i = 0; i < n; ++i) text += " tok";
    Json choice =
        chat
            ? Json{{"index", 0},
                   {"message", {{"role", "assistant"}, {"content", text}}},
                   {"logprobs", nullptr},
                   {"finish_reason", "length"}}
            : Json{
                  {"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", "length"}};
    Json out = {{"id", "canned"},      {"object", chat ? "chat.completion" : "text_completion"},
                {"created", created},  {"model", o.model},
                {"choices", {choice}}, {"usage", usage}};
    return res->Send(200, json, out.dump());
  }
  const bool with_usage = BoolOr(AnyOr(body, "stream_options"), "include_usage", false);
  std::string sse;
  for (int i = 0; i < n; ++i) {
    Json choice = chat ? Json{{"index", 0},
                              {"delta", {{"content", " tok"}}},
                              {"logprobs", nullptr},
                              {"finish_reason", i + 1 == n ? Json("length") : Json()}}
                       : Json{{"index", 0},
                              {"text", " tok"},
                              {"logprobs", nullptr},
                              {"finish_reason", i + 1 == n ? Json("length") : Json()}};
    Json chunk = {{"id", "canned"},
                  {"object", chat ? "chat.completion.chunk" : "text_completion"},
                  {"created", created},
                  {"model", o.model},
                  {"choices", {choice}}};
    sse += "data: " + chunk.dump() + "\n\n";
  }
  if (with_usage) {
    Json chunk = {
        {"id", "canned"},           {"object", chat ? "chat.completion.chunk" : "text_completion"},
        {"created", created},       {"model", o.model},
        {"choices", Json::array()}, {"usage", usage}};
    sse += "data: " + chunk.dump() + "\n\n";
  }
  sse += "data: [DONE]\n\n";
  res->StartStream(200, {{"Content-Type", "text/event-stream"}});
  res->Write(std::move(sse));
  res->End();
}

}  // namespace

Expected<std::unique_ptr<http::Server>> StartCannedUpstream(const CannedUpstreamOptions& options) {
  http::ServerOptions opts;
  opts.host = options.host;
  opts.port = options.port;
  opts.io_threads = options.io_threads;
  return http::Server::Start(opts,
                             [options](http::Request&& req, std::shared_ptr<http::Responder> res) {
                               Answer(options, std::move(req), std::move(res));
                             });
}

}  // namespace brisk::gateway
