// libFuzzer target (BRISK_FUZZ=ON): any byte string, sent to each endpoint
// (chat, completions, and the Responses API's body)
// with unknown fields rejected or ignored, must parse into a request that
// honours every documented bound, or into a 400 error; and whatever comes out
// must build response bodies, SSE events and the ignored-fields header that
// parse back with the right shape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/ignored_fields.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/openai_responses.h"
#include "server/structured_output.h"

namespace {

using brisk::api::Endpoint;
using Json = nlohmann::ordered_json;

void Check(bool ok) {
  if (!ok) std::abort();
}

Json MustParseJson(std::string_view s) {
  Json j = Json::parse(s, nullptr, false);
  Check(!j.is_discarded() && j.is_object());
  return j;
}

Json MustParseSse(const std::string& event) {
  Check(event.size() > 8 && event.compare(0, 6, "data: ") == 0);
  Check(event.compare(event.size() - 2, 2, "\n\n") == 0);
  std::string_view payload(event.data() + 6, event.size() - 8);
  Check(payload.find('\n') == std::string_view::npos);
  return MustParseJson(payload);
}

void CheckError(const brisk::api::ApiError& e) {
  Check(e.http_status == 400 && e.type == "invalid_request_error" && !e.message.empty());
  Json j = MustParseJson(brisk::http::OpenAiErrorBody(e));
  Check(j["error"]["message"].is_string());
  MustParseSse(brisk::http::OpenAiErrorEvent(e));
}

void CheckRequest(Endpoint ep, bool ignore_unknown, const brisk::api::ApiRequest& r) {
  using namespace brisk::api;
  Check(r.endpoint == ep && !r.model.empty());
  Check(r.n >= 1 && r.n <= kMaxN);
  Check(!r.max_tokens || *r.max_tokens >= 1);
  Check(r.stop.size() <= kMaxStop);
  for (const std::string& s : r.stop) Check(!s.empty());
  Check(r.sampling.Validate().ok());
  Check(r.sampling.logit_bias.size() <= kMaxLogitBiasEntries);
  for (size_t i = 1; i < r.sampling.logit_bias.size(); ++i)
    Check(r.sampling.logit_bias[i - 1].first < r.sampling.logit_bias[i].first);
  Check(!r.include_usage || r.stream);
  Check(!r.continuous_usage || r.include_usage);
  Check(!r.timeout_s || *r.timeout_s > 0);
  Check(r.min_tokens >= 0 && (!r.max_tokens || r.min_tokens <= *r.max_tokens));
  Check(r.stop_token_ids.size() <= kMaxStopTokenIds);
  for (int32_t id : r.stop_token_ids) Check(id >= 0);
  Check(r.logprobs >= -1 &&
        r.logprobs <=
            (ep == Endpoint::kChatCompletions ? kMaxTopLogprobs : kMaxCompletionLogprobs));
  Check(!r.echo || ep == Endpoint::kCompletions);
  if (r.tools) {
    Check(ep == Endpoint::kChatCompletions && !r.tools->tools.empty());
    for (const auto& t : r.tools->tools) Check(!t.name.empty() && t.name.size() <= 64);
  }
  if (r.guided) {  // structured_outputs: one constraint, and it compiles or is a 400
    Check(!r.response_format && !r.guided->param.empty());
    auto c = brisk::PrepareGuidedConstraint(nullptr, *r.guided);
    if (auto* e = std::get_if<ApiError>(&c)) CheckError(*e);
  }
  Check(ignore_unknown || r.ignored_fields.empty());
  for (size_t i = 0; i < r.ignored_fields.size(); ++i) {
    Check(r.ignored_fields[i].size() <= 67);  // "" for a key that is ""
    for (size_t j = 0; j < i; ++j) Check(r.ignored_fields[i] != r.ignored_fields[j]);
  }
  const std::string header = brisk::IgnoredFieldsHeaderValue(r.ignored_fields);
  Check(header.size() <= brisk::kMaxIgnoredFieldsHeaderBytes);
  for (char c : header) Check(c > 0x20 && c < 0x7f);  // a safe header value

  // Gather the request's text as stand-in model output.
  std::vector<Choice> choices;
  if (ep == Endpoint::kChatCompletions) {
    Check(r.messages.is_array() && !r.messages.empty());
    for (const auto& m : r.messages) {
      Check(m["role"].is_string() && m["content"].is_string());
      choices.push_back(
          {static_cast<int>(choices.size()), m["content"].get<std::string>(), "stop"});
    }
  } else {
    Check(r.prompts.empty() != r.prompt_tokens.empty());
    for (const auto& t : r.prompt_tokens) {
      Check(!t.empty());
      for (int32_t id : t) Check(id >= 0);
    }
    for (const std::string& p : r.prompts) {
      choices.push_back({static_cast<int>(choices.size()), p, "length"});
    }
  }
  const std::string id = NewRequestId(ep);
  const Usage u{.prompt_tokens = 3, .completion_tokens = 4, .cached_tokens = 1};
  Json body = MustParseJson(CompletionBody(ep, id, r.model, 1, choices, u));
  Check(body["choices"].size() == choices.size());
  Check(body["usage"]["total_tokens"] == 7);
  for (const Choice& c : choices) {
    Json chunk = MustParseSse(SseChunk(ep, id, r.model, 1, c.index, "assistant", c.text, "stop",
                                       r.continuous_usage ? &u : nullptr));
    Check(chunk["choices"].size() == 1 && chunk["choices"][0]["index"] == c.index);
    Check(chunk.contains("usage") == r.continuous_usage);
  }
  Check(MustParseSse(SseUsageChunk(ep, id, r.model, 1, u))["choices"].empty());
  Check(MustParseJson(ModelsBody({r.model}, 1))["data"].size() == 1);
}

// A Responses body: a 400 (or 404-free) error, or a request whose chat
// translation the chat parser accepts or refuses cleanly, whose input items
// all carry a type and an id, and whose response object serializes.
void CheckResponses(std::string_view body, bool ignore) {
  using namespace brisk::api;
  const ParseOptions po{.ignore_unknown_fields = ignore};
  auto parsed = ParseResponsesRequest(body, po);
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    CheckError(*e);
    return;
  }
  const ResponsesRequest& r = std::get<ResponsesRequest>(parsed);
  Check(!r.model.empty());
  Check(ignore || r.ignored_fields.empty());
  for (const Json& item : r.input_items) {
    Check(item["type"].is_string() && item["id"].is_string());
  }
  Check(r.input_messages.size() >= 1 || !r.previous_response_id.empty());
  auto chat = ParseRequest(Endpoint::kChatCompletions, ChatBody(r, Json::array()), po);
  if (auto* e = std::get_if<ApiError>(&chat)) CheckError(ResponsesError(*e));
  const Usage u{.prompt_tokens = 2, .completion_tokens = 1, .cached_tokens = 0};
  Json output = Json::array({MessageItem(NewMessageItemId(), "completed", "x")});
  Json obj = ResponseObject(r, NewResponseId(), 1, r.model, "completed", output, &u);
  Json back = MustParseJson(obj.dump(-1, ' ', false, Json::error_handler_t::replace));
  Check(back["object"] == "response" && back["usage"]["total_tokens"] == 3);
  Check(OutputToMessages(output).size() == 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  for (Endpoint ep : {Endpoint::kChatCompletions, Endpoint::kCompletions}) {
    for (bool ignore : {false, true}) {
      auto r = brisk::api::ParseRequest(ep, body, {.ignore_unknown_fields = ignore});
      if (auto* e = std::get_if<brisk::api::ApiError>(&r)) {
        CheckError(*e);
      } else {
        CheckRequest(ep, ignore, std::get<brisk::api::ApiRequest>(r));
      }
    }
  }
  for (bool ignore : {false, true}) CheckResponses(body, ignore);
  return 0;
}
