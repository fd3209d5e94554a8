// The Responses API through the gateway: a request's turn from the shared
// store (gateway/shared_responses.h), and the stored objects' routes.
#include <fmt/format.h>

#include "gateway/gateway_admission.h"
#include "gateway/json_fields.h"
#include "gateway/shared_responses.h"
#include "http/caller_identity.h"
#include "http/openai_error.h"
#include "http/responses_items.h"

namespace brisk::gateway {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

int64_t StoreNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void AdmitResponses(const std::shared_ptr<GatewayCore>& core, Json body, Caller caller,
                    std::shared_ptr<http::Responder> res, Clock::time_point arrival) {
  auto turn = std::make_shared<ResponsesTurn>();
  if (auto st = body.find("store"); st != body.end() && st->is_boolean()) turn->store = *st;
  turn->previous_response_id = StringOr(body, "previous_response_id", "");
  const auto input = nlohmann::ordered_json::parse(
      AnyOr(body, "input").dump(-1, ' ', false, Json::error_handler_t::replace));
  auto items = http::InputItemsOf(input);
  if (auto* e = std::get_if<http::OpenAiError>(&items)) return http::SendOpenAiError(*res, *e);
  turn->input_items = std::get<nlohmann::ordered_json>(std::move(items));
  if (!turn->previous_response_id.empty()) {
    auto prev = core->responses->Get(caller.tenant, turn->previous_response_id, StoreNowMs());
    if (!prev.ok()) {
      return http::SendOpenAiError(
          *res, 503, "server_error",
          fmt::format("the stored responses cannot be read now: {}", prev.status().message()),
          "store_unavailable");
    }
    if (!prev->has_value()) {
      return http::SendOpenAiError(
          *res, http::ResponseNotFound(turn->previous_response_id, "previous_response_id"));
    }
    turn->history = nlohmann::ordered_json::parse((*prev)->conversation, nullptr, false);
    if (!turn->history.is_array()) turn->history = nlohmann::ordered_json::array();
  }
  Json upstream_input = Json::array();
  for (const auto& item : turn->history) upstream_input.push_back(Json::parse(item.dump()));
  for (const auto& item : turn->input_items) upstream_input.push_back(Json::parse(item.dump()));
  body["input"] = std::move(upstream_input);
  body.erase("previous_response_id");
  Admit(core, Endpoint::kResponses, std::move(body), std::move(caller), std::move(res), arrival,
        std::move(turn));
}

void ResponseById(const std::shared_ptr<GatewayCore>& core, const http::Request& req,
                  http::Responder& res) {
  const ApiKeyConfig* key = ResolveCaller(core->config.keys, req.Header("Authorization"));
  const std::string tenant = key ? key->tenant : "";
  constexpr std::string_view kPrefix = "/v1/responses/";
  constexpr std::string_view kInputItems = "/input_items";
  std::string id = req.path.substr(kPrefix.size());
  const bool items = id.size() > kInputItems.size() && id.ends_with(kInputItems);
  if (items) id.resize(id.size() - kInputItems.size());
  auto unavailable = [&](const Status& st) {
    http::SendOpenAiError(res, 503, "server_error",
                          fmt::format("the stored responses cannot be read now: {}", st.message()),
                          "store_unavailable");
  };
  const http::Headers json = {{"Content-Type", "application/json"}};
  if (req.method == "DELETE") {
    auto erased = core->responses->Erase(tenant, id);
    if (!erased.ok()) return unavailable(erased.status());
    if (!*erased) return http::SendOpenAiError(res, http::ResponseNotFound(id));
    return res.Send(200, json, Json{{"id", id}, {"object", "response"}, {"deleted", true}}.dump());
  }
  std::optional<http::InputItemsQuery> query;
  if (items) {
    const size_t q = req.target.find('?');
    auto parsed = http::ParseInputItemsQuery(
        q == std::string::npos ? std::string_view() : std::string_view(req.target).substr(q + 1));
    if (auto* e = std::get_if<http::OpenAiError>(&parsed)) return http::SendOpenAiError(res, *e);
    query = std::get<http::InputItemsQuery>(parsed);
  }
  auto stored = core->responses->Get(tenant, id, StoreNowMs());
  if (!stored.ok()) return unavailable(stored.status());
  if (!stored->has_value()) return http::SendOpenAiError(res, http::ResponseNotFound(id));
  if (!items) return res.Send(200, json, std::move((*stored)->response));
  auto all = nlohmann::ordered_json::parse((*stored)->input_items, nullptr, false);
  if (!all.is_array()) all = nlohmann::ordered_json::array();
  auto page = http::InputItemsPage(all, *query);
  if (auto* e = std::get_if<http::OpenAiError>(&page)) return http::SendOpenAiError(res, *e);
  res.Send(
      200, json,
      std::get<nlohmann::ordered_json>(page).dump(-1, ' ', false, Json::error_handler_t::replace));
}

}  // namespace brisk::gateway
