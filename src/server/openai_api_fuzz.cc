// libFuzzer target (BRISK_FUZZ=ON): any byte string, sent to either endpoint,
// must parse into a request that honours every documented bound, or into a
// 400 error; and whatever comes out must build response bodies and SSE
// events that parse back as JSON with the right shape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/openai_request.h"
#include "server/openai_response.h"

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
  Json j = MustParseJson(brisk::api::ErrorBody(e));
  Check(j["error"]["message"].is_string());
  MustParseSse(brisk::api::SseError(e));
}

void CheckRequest(Endpoint ep, const brisk::api::ApiRequest& r) {
  using namespace brisk::api;
  Check(r.endpoint == ep && !r.model.empty());
  Check(r.n >= 1 && r.n <= kMaxN);
  Check(!r.max_tokens || *r.max_tokens >= 1);
  Check(r.stop.size() <= kMaxStop);
  for (const std::string& s : r.stop) Check(!s.empty());
  Check(r.sampling.Validate().ok());
  Check(!r.include_usage || r.stream);
  Check(!r.timeout_s || *r.timeout_s > 0);

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
    Json chunk = MustParseSse(SseChunk(ep, id, r.model, 1, c.index, "assistant", c.text, "stop"));
    Check(chunk["choices"].size() == 1 && chunk["choices"][0]["index"] == c.index);
  }
  Check(MustParseSse(SseUsageChunk(ep, id, r.model, 1, u))["choices"].empty());
  Check(MustParseJson(ModelsBody({r.model}, 1))["data"].size() == 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  for (Endpoint ep : {Endpoint::kChatCompletions, Endpoint::kCompletions}) {
    auto r = brisk::api::ParseRequest(ep, body);
    if (auto* e = std::get_if<brisk::api::ApiError>(&r)) {
      CheckError(*e);
    } else {
      CheckRequest(ep, std::get<brisk::api::ApiRequest>(r));
    }
  }
  return 0;
}
