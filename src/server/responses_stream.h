// One Responses API response in flight (POST /v1/responses): the engine's
// outputs for its one sequence become either one response object or the
// Responses SSE events (response.created, response.in_progress,
// response.output_item.added, response.content_part.added,
// response.output_text.delta..., response.output_text.done,
// response.content_part.done, response.output_item.done,
// response.completed | response.incomplete; function calls as
// response.function_call_arguments.delta / .done), each with "type" and
// "sequence_number". A finished response with "store": true goes into the
// ResponseStore with its conversation. Records the same metrics as
// ResponseStream.
//
// Threading: every method runs on the request's strand.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_client.h"
#include "engine/generation.h"
#include "http/server.h"
#include "server/openai_responses.h"
#include "server/reasoning.h"
#include "server/response_store.h"
#include "server/response_stream.h"
#include "server/server_metrics.h"
#include "server/tool_call_parser.h"

namespace brisk {

class ResponsesStream {
 public:
  struct Options {
    std::shared_ptr<const api::ResponsesRequest> request;
    std::string id;  // resp_...
    std::string model_id;
    int64_t created_at = 0;
    http::Headers extra_headers;
    Priority priority = Priority::kInteractive;
    Clock::time_point arrival;
    // The output is a forced tool call (PreparedRequest::tool_choice not
    // "none"): one function_call item per call.
    bool tool_calls = false;
    // tool_choice "auto" (with tool_calls): the model writes text, and a
    // call from the engine's SequenceOutput::constrained_from on, if it
    // starts one. The text before it is a message item ahead of the calls.
    bool tool_calls_auto = false;
    // The model's reasoning becomes a reasoning item before the others
    // (server/reasoning.h; PreparedRequest's fields).
    ReasoningMarkers reasoning;
    ReasoningStart reasoning_start = ReasoningStart::kClosed;
    bool constraint_after_reasoning = false;
    // Where a stored response goes (null: not stored), under this tenant,
    // with this conversation before the request's input.
    ResponseStore* store = nullptr;
    std::string tenant;
    nlohmann::ordered_json history = nlohmann::ordered_json::array();
  };
  using DoneCallback = ResponseStream::DoneCallback;

  ResponsesStream(Options options, std::shared_ptr<http::Responder> res, ServerMetrics& metrics,
                  EngineClient& engine, DoneCallback on_done);

  void SetEngineRequest(int64_t request_id) { engine_id_ = request_id; }
  // Sends response.created and response.in_progress (streams only).
  void Begin();
  void OnOutput(const SequenceOutput& out, const Status& error);
  void OnClientGone();
  void FailSubmit(const Status& st);

 private:
  void Cancel();
  void Fail(const SequenceOutput& out, const Status& error);
  void Write(std::string_view type, nlohmann::ordered_json fields);
  void StreamReasoning(const std::string& text);
  // Streams: the closing events of the reasoning item (once), before the
  // next item opens.
  void CloseReasoning();
  // Output index of the message item: after the reasoning item, if any.
  size_t MessageIndex() const { return reasoning_.empty() ? 0 : 1; }
  void StreamText(const std::string& text);
  void StreamCalls(const std::string& text);
  // Streams: the closing events of the message item (once).
  void CloseMessage(std::string_view status);
  // Streams: the closing events of the open items.
  void CloseItems(bool cut);
  // Streams: the closing events of the calls before the last one (a call
  // is done when the next one starts, as OpenAI streams them).
  void CloseCalls(size_t end, std::string_view status);
  // tool_choice forces a call: the output is calls only, never a message.
  bool ForcedCall() const;
  // Output index of the first call: after the message item, if any.
  size_t CallBase() const;
  // The output items of the finished response.
  nlohmann::ordered_json FinalOutput(bool cut);
  void Complete(bool cut);
  void End(ResponseSummary summary);

  struct Call {
    std::string item_id, call_id, name, arguments;
  };

  const Options opts_;
  std::shared_ptr<http::Responder> res_;
  ServerMetrics& metrics_;
  EngineClient& engine_;
  DoneCallback on_done_;

  int64_t engine_id_ = -1;
  bool cancel_sent_ = false;
  bool started_ = false;
  bool done_ = false;
  int64_t seq_ = 0;
  std::string text_;  // everything the model wrote (auto tool calls: before the call)
  std::string msg_id_;
  ReasoningTap tap_;
  std::string reasoning_;  // the model's reasoning so far
  std::string rs_id_;
  bool rs_open_ = false;     // streams: reasoning item announced
  bool rs_closed_ = false;   // streams: and closed
  bool msg_open_ = false;    // streams: message item and part announced
  bool msg_closed_ = false;  // streams: and closed (a call followed)
  bool in_call_ = false;     // auto tool calls: the call has started
  api::ToolCallParser parser_;
  std::vector<Call> calls_;
  size_t calls_closed_ = 0;  // streams: calls whose closing events went out
  std::optional<Clock::time_point> t_first_;
  Clock::time_point t_last_, t_prev_token_;
  api::Usage usage_;
  double queue_s_ = -1;
};

}  // namespace brisk
