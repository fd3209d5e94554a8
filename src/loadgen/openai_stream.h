// The OpenAI streaming protocol without the sockets: request bodies for
// /v1/completions and /v1/chat/completions, and the interpretation of the
// response's SSE events into a RequestRecord (chunk timestamps, usage,
// errors). Pure logic, so it is tested with hand-made events.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "http/sse.h"
#include "loadgen/request_record.h"
#include "loadgen/workload.h"

namespace brisk::loadgen {

using Clock = std::chrono::steady_clock;

// Seconds from `a` to `b`.
inline double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

enum class ApiKind { kCompletions, kChat };
const char* ApiPath(ApiKind api);  // "/v1/completions" or "/v1/chat/completions"

struct RequestOptions {
  ApiKind api = ApiKind::kCompletions;
  std::string model;
  double temperature = 0;
  bool ignore_eos = false;  // llama-server and vLLM honour it; others ignore it
  // Merged into every request body last (server-specific knobs); null = none.
  nlohmann::json extra_body;
};

// The JSON body: model, prompt or messages, max_tokens, temperature,
// stream = true, stream_options.include_usage = true, ignore_eos if asked.
// Text that is not valid UTF-8 is replaced, never thrown on.
std::string BuildRequestBody(const WorkloadItem& item, const RequestOptions& options);

// Consumes one response stream's events. A chunk is content-bearing when its
// choices[0].text (completions) or choices[0].delta.content (or
// reasoning_content) (chat) is non-empty: those set TTFT and ITL. The end of
// the request (E2E) is the last chunk carrying choices, content or
// finish_reason (vLLM's definition). The last usage object seen gives the
// token counts.
class OpenAiStream {
 public:
  OpenAiStream(ApiKind api, Clock::time_point sent) : api_(api), sent_(sent) {}

  // One event received at `now`.
  void OnEvent(const http::SseEvent& event, Clock::time_point now);
  // True after [DONE] or an error event: nothing more needs reading.
  bool finished() const { return done_ || !error_.empty(); }

  // Writes the outcome for an HTTP-200 stream into `r` (status, ttft, e2e,
  // itl, token counts, finish_reason, error). `prompt_tokens_estimate` is
  // used when the server sent no usage.
  void Complete(int64_t prompt_tokens_estimate, RequestRecord* r) const;

 private:
  void OnJson(const nlohmann::json& j, Clock::time_point now);

  ApiKind api_;
  Clock::time_point sent_;
  Clock::time_point first_content_{}, last_content_{}, last_choice_{};
  int64_t content_chunks_ = 0;
  std::vector<double> itl_s_;
  int64_t usage_prompt_ = -1, usage_completion_ = -1;
  std::string finish_reason_;
  std::string error_;
  bool done_ = false;
};

}  // namespace brisk::loadgen
