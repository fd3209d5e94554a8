// One OpenAI response in flight: turns the engine's outputs for a request
// into an SSE stream or one JSON body, and records the request's metrics.
//
// Threading: every method runs on the request's strand (a worker executor of
// the server, never the engine thread and never an HTTP I/O thread). The
// engine's sink only posts plain outputs there, so JSON and SSE formatting
// cost the engine thread nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/engine_client.h"
#include "engine/generation.h"
#include "http/server.h"
#include "model/tokenizer.h"
#include "obs/server_timing.h"
#include "server/openai_api.h"
#include "server/reasoning.h"
#include "server/server_metrics.h"
#include "server/tool_call_parser.h"

namespace brisk {

// A duration in seconds.
inline double SecondsOf(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// How a request ended, for the access log.
struct ResponseSummary {
  int http_status = 200;
  std::string outcome;        // ok | cancelled | rejected | timeout | error | invalid
  std::string finish_reason;  // of the first choice; "" if none
  api::Usage usage;
  double queue_s = -1, ttft_s = -1, total_s = -1;
  // Latency budget of a completed answer (tokenize, queue, prefill, decode,
  // write: obs/server_timing.h); empty when it failed.
  std::vector<TimedStage> stages;
  std::string trace_id;  // Options::trace_id
};

class ResponseStream {
 public:
  struct Options {
    api::Endpoint endpoint = api::Endpoint::kChatCompletions;
    std::string id;  // chatcmpl-... / cmpl-...
    std::string model_id;
    int64_t created_unix = 0;
    bool stream = false;
    bool include_usage = false;
    // Every chunk carries the usage so far (vLLM's continuous_usage_stats);
    // its prompt_tokens is `prompt_tokens`, the prompts' total length.
    bool continuous_usage = false;
    int64_t prompt_tokens = 0;
    // Added to the 200 answer's headers (stream or JSON body).
    http::Headers extra_headers;
    int n = 1;            // samples per prompt
    int num_prompts = 1;  // choices = num_prompts * n
    Priority priority = Priority::kInteractive;
    Clock::time_point arrival;
    // Parsed, templated and tokenized (the `tokenize` stage ends, `queue`
    // begins): the stage boundaries of the Server-Timing header.
    Clock::time_point prepared;
    std::string trace_id;  // for the summary (access log)
    // Logprobs (openai_logprobs.h): -1 = none, else the engine sends records
    // and `tokenizer` turns them into text (control tokens rendered when
    // render_special, i.e. skip_special_tokens is false).
    int logprobs = -1;
    const Tokenizer* tokenizer = nullptr;
    bool render_special = false;
    // Completions' echo: each prompt's text, put before its choices' text
    // (with logprobs, its tokens' records, from the engine, before theirs).
    std::vector<std::string> echo_prompts;
    bool echo_token_prompts = false;  // see PreparedRequest::echo_token_prompts
    // Chat with a forced tool call (openai_tools.h): the output is parsed
    // into message.tool_calls / tool_calls deltas (finish_reason
    // "tool_calls"); one call or several (api::ToolCallParser tells).
    bool tool_calls = false;
    // With tool_calls, tool_choice "auto": the text is content until the
    // engine's SequenceOutput::constrained_from, the call from there on.
    bool tool_calls_auto = false;
    // Chat: the model's reasoning goes to message.reasoning_content /
    // reasoning_content deltas (server/reasoning.h; PreparedRequest's fields).
    ReasoningMarkers reasoning;
    ReasoningStart reasoning_start = ReasoningStart::kClosed;
    bool constraint_after_reasoning = false;
  };
  using DoneCallback = std::function<void(const ResponseSummary&)>;

  // `on_done` runs exactly once, when the response is complete or abandoned.
  ResponseStream(Options options, std::shared_ptr<http::Responder> res, ServerMetrics& metrics,
                 EngineClient& engine, DoneCallback on_done);

  // The engine request ids serving this response (one per prompt).
  void AddEngineRequest(int64_t request_id) { engine_ids_.push_back(request_id); }
  // Output of prompt `prompt_index` from the engine's sink.
  void OnOutput(int prompt_index, const SequenceOutput& out, const Status& error);
  // The client went away: cancel generation (its outputs are then dropped).
  void OnClientGone();
  // Submit failed for prompt `prompt_index`: cancel the others and answer.
  void FailSubmit(const Status& st);
  bool done() const { return done_; }

 private:
  void CancelEngineRequests();
  void Fail(const SequenceOutput& out, const Status& error);
  // `reasoning`: the reasoning this output carried (sent before its text).
  void StreamOutput(int index, int prompt_index, const SequenceOutput& out,
                    const std::string& reasoning);
  // Streams an output's text (and its final chunk) as content deltas.
  void StreamText(int index, int prompt_index, const SequenceOutput& out, const api::Usage* usage);
  // tool_choice "auto": the output's content part as text, its call part as
  // tool-call deltas.
  void StreamAuto(int index, int prompt_index, const SequenceOutput& out, const api::Usage* usage);
  // The echoed prompt text of a choice's first output ("" otherwise).
  std::string TakeEcho(int index, int prompt_index);
  // Tool calls: streams a chunk's tool-call deltas (and the final chunk).
  void StreamToolCalls(int index, const SequenceOutput& out, const api::Usage* usage);
  // Tool calls, non-streaming: the call's finished text -> message.tool_calls
  // and finish_reason "tool_calls" (unless it was cut off: then nothing).
  void FinishToolCalls(api::Choice& ch, const std::string& call_text);
  // Chat: {"content": [...]}; completions: the legacy object. `prompt` are
  // echoed prompt records (the first without a logprob).
  nlohmann::ordered_json LogprobsJson(int index, std::span<const TokenLogprob> prompt,
                                      std::span<const TokenLogprob> generated);
  void StartStream();
  // For continuous usage: the usage so far, else null.
  const api::Usage* UsageSoFar();
  void Complete();
  // The latency budget (ResponseSummary::stages) of an answer whose last
  // token came at `done` and whose last bytes were handed over at `written`.
  std::vector<TimedStage> Stages(Clock::time_point done, Clock::time_point written) const;
  void End(ResponseSummary summary);

  const Options opts_;
  std::shared_ptr<http::Responder> res_;
  ServerMetrics& metrics_;
  EngineClient& engine_;
  DoneCallback on_done_;

  std::vector<int64_t> engine_ids_;
  bool cancel_sent_ = false;
  bool started_ = false;  // stream headers sent
  bool done_ = false;
  int remaining_ = 0;  // choices not finished
  std::vector<api::Choice> choices_;
  std::vector<uint8_t> role_sent_;
  std::vector<uint8_t> echo_sent_;
  // Logprobs: per choice, records not sent yet (streaming: tokens whose text
  // is held back; else all of them), the echoed prompt's, and the text
  // offset (completions) of the next token.
  std::vector<std::vector<TokenLogprob>> lp_pending_;
  std::vector<std::vector<TokenLogprob>> lp_prompt_;
  std::vector<int64_t> text_offset_;
  std::vector<api::ToolCallParser> tool_parsers_;  // streaming tool calls, per choice
  // tool_choice "auto", per choice: the trigger fired; the call's text
  // (non-streaming).
  std::vector<uint8_t> in_call_;
  std::vector<std::string> call_text_;
  std::vector<ReasoningTap> reasoning_;  // per choice; off without markers
  std::vector<Clock::time_point> last_token_at_;
  std::optional<Clock::time_point> t_first_;
  Clock::time_point t_last_;
  api::Usage usage_;
  api::Usage usage_so_far_;  // continuous usage: tokens streamed so far
  double queue_s_ = -1;
};

// 429 for a full queue, with the Retry-After the engine estimates.
api::ApiError QueueFullError(const Status& st, double retry_s, http::Headers* extra);

// How a failed request is answered and counted; shared by the chat /
// completions stream and the Responses stream.
struct FailureAnswer {
  api::ApiError error;
  http::Headers extra;  // Retry-After for a 429
  const char* outcome = "error";
  // The request's summary: status 499 when the client closed it (nginx's
  // convention), 200 when the stream had started, else the error's.
  ResponseSummary Summary(bool client_closed, bool started) const;
};
// The engine refused the submission: a full queue (429), draining (503),
// or a request it cannot run (400).
FailureAnswer SubmitFailure(const Status& st, const EngineClient& engine, Priority priority);
// A sequence ended abnormally: preempted past the queue (429), cancelled by
// the client ("cancelled") or a shutdown (503), its deadline (504), else 500.
FailureAnswer GenerationFailure(const SequenceOutput& out, const Status& error, bool client_closed,
                                const EngineClient& engine, Priority priority);

}  // namespace brisk
