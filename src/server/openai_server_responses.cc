// OpenAiServer's Responses API routes (the rest of the class:
// openai_server.cc): POST /v1/responses becomes a chat request
// (openai_responses.h), is prepared as chat is, and is answered by a
// ResponsesStream; GET / DELETE /v1/responses/{id} read the ResponseStore.
#include <boost/asio/post.hpp>

#include "server/openai_fields.h"
#include "server/openai_responses.h"
#include "server/openai_server.h"
#include "server/responses_stream.h"
#include "server/server_metrics.h"
#include "server/structured_output.h"

namespace brisk {
namespace {

namespace net = boost::asio;
using Json = nlohmann::ordered_json;

constexpr std::string_view kResponsesPrefix = "/v1/responses/";

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void OpenAiServer::RunResponseById(const http::Request& req, http::Responder& res) {
  const http::Headers json = {{"Content-Type", "application/json"}};
  auto caller = Authenticate(config_, req.Header("Authorization"));
  if (auto* e = std::get_if<api::ApiError>(&caller)) return http::SendOpenAiError(res, *e);
  const std::string& tenant = std::get<Caller>(caller).tenant;
  std::string id = req.path.substr(kResponsesPrefix.size());
  constexpr std::string_view kInputItems = "/input_items";
  if (id.size() > kInputItems.size() && id.ends_with(kInputItems)) {
    id.resize(id.size() - kInputItems.size());
    const size_t qmark = req.target.find('?');
    auto query = api::ParseInputItemsQuery(qmark == std::string::npos
                                               ? std::string_view()
                                               : std::string_view(req.target).substr(qmark + 1));
    if (auto* e = std::get_if<api::ApiError>(&query)) return http::SendOpenAiError(res, *e);
    auto stored = responses_.Get(tenant, id);
    if (!stored) return http::SendOpenAiError(res, api::ResponseNotFound(id));
    auto page = api::InputItemsPage(stored->input_items, std::get<api::InputItemsQuery>(query));
    if (auto* e = std::get_if<api::ApiError>(&page)) return http::SendOpenAiError(res, *e);
    return res.Send(200, json,
                    std::get<Json>(page).dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  if (req.method == "DELETE") {
    if (!responses_.Erase(tenant, id)) return http::SendOpenAiError(res, api::ResponseNotFound(id));
    return res.Send(200, json,
                    Json{{"id", id}, {"object", "response"}, {"deleted", true}}.dump(
                        -1, ' ', false, Json::error_handler_t::replace));
  }
  auto stored = responses_.Get(tenant, id);
  if (!stored) return http::SendOpenAiError(res, api::ResponseNotFound(id));
  res.Send(200, json, stored->response.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void OpenAiServer::RunResponses(const http::Request& req, std::shared_ptr<http::Responder> res,
                                Clock::time_point arrival, const net::any_io_executor& strand) {
  const auto reject = [&](const api::ApiError& e) {
    const char* outcome = e.http_status == 401 ? "rejected" : "invalid";
    Reject(e, outcome, *res);
    ResponseSummary s;
    s.http_status = e.http_status;
    s.outcome = outcome;
    s.total_s = std::chrono::duration<double>(Clock::now() - arrival).count();
    LogAccess(req, 2, "", nullptr, s);
  };
  auto caller = Authenticate(config_, req.Header("Authorization"));
  if (auto* e = std::get_if<api::ApiError>(&caller)) return reject(*e);
  const std::string tenant = std::get<Caller>(caller).tenant;
  const api::ParseOptions po{
      .ignore_unknown_fields = config_.server.unknown_request_fields == "ignore",
      .default_model = prep_.model_id};
  auto parsed = api::ParseResponsesRequest(req.body, po);
  if (auto* e = std::get_if<api::ApiError>(&parsed)) return reject(*e);
  auto rr =
      std::make_shared<api::ResponsesRequest>(std::move(std::get<api::ResponsesRequest>(parsed)));

  // A follow-up continues the stored conversation (its instructions are not
  // carried over, as OpenAI does).
  Json history = Json::array();
  if (!rr->previous_response_id.empty()) {
    auto prev = responses_.Get(tenant, rr->previous_response_id);
    if (!prev)
      return reject(api::ResponseNotFound(rr->previous_response_id, "previous_response_id"));
    history = prev->messages;
  }

  // The chat request this is: the same headers (key, priority, timeout).
  http::Request chat;
  chat.method = req.method;
  chat.target = "/v1/chat/completions";
  chat.path = chat.target;
  chat.remote = req.remote;
  chat.headers = req.headers;
  chat.body = api::ChatBody(*rr, history);
  auto prepared = PrepareRequest(prep_, api::Endpoint::kChatCompletions, chat, arrival);
  if (auto* e = std::get_if<api::ApiError>(&prepared)) return reject(api::ResponsesError(*e));
  auto pr = std::make_shared<PreparedRequest>(std::move(std::get<PreparedRequest>(prepared)));

  ResponsesStream::Options o;
  o.request = rr;
  o.id = api::NewResponseId();
  o.model_id = prep_.model_id;
  o.created_at = UnixNow();
  std::vector<std::string> ignored = rr->ignored_fields;
  ignored.insert(ignored.end(), pr->ignored_fields.begin(), pr->ignored_fields.end());
  o.extra_headers = ReportIgnored(ignored);
  NoteConstraint(*pr, &o.extra_headers);
  o.priority = pr->priority;
  o.arrival = arrival;
  o.tool_calls = !pr->tool_choice.empty() && pr->tool_choice != "none";
  o.tool_calls_auto = pr->tool_choice == "auto";
  o.reasoning = pr->reasoning;
  o.reasoning_start = pr->reasoning_start;
  o.constraint_after_reasoning = pr->constraint_after_reasoning;
  if (!pr->tool_choice.empty())
    o.extra_headers.emplace_back("x-brisk-tool-choice", pr->tool_choice);
  o.store = &responses_;
  o.tenant = tenant;
  o.history = std::move(history);
  ++active_;
  auto head = std::make_shared<http::Request>();
  head->remote = req.remote;
  head->headers = req.headers;
  const std::string id = o.id;
  auto stream = std::make_shared<ResponsesStream>(
      std::move(o), res, *metrics_, engine_, [this, head, id, pr](const ResponseSummary& s) {
        --active_;
        if (pr->constraint && s.finish_reason == "length")
          metrics_->structured_output_failures["length"]->Inc();
        LogAccess(*head, 2, id, pr.get(), s);
      });
  if (pr->prompts.size() != 1) return stream->FailSubmit(Internal("expected one prompt"));
  auto request_id = engine_.Submit(
      std::move(pr->prompts[0]), [stream, strand](const SequenceOutput& out, const Status& error) {
        net::post(strand, [stream, out, error] { stream->OnOutput(out, error); });
      });
  pr->prompts.clear();
  if (!request_id.ok()) return stream->FailSubmit(request_id.status());
  stream->SetEngineRequest(*request_id);
  stream->Begin();  // outputs wait on this strand until it returns
  if (config_.response.cancel_on_disconnect) {
    std::weak_ptr<ResponsesStream> weak = stream;
    res->OnClose([weak, strand] {
      net::post(strand, [weak] {
        if (auto s = weak.lock()) s->OnClientGone();
      });
    });
  }
}

}  // namespace brisk
