// What the gateway does to an upstream's answer on its way to the client,
// as pure functions over bytes and JSON (no sockets), so they are unit-tested.
//
// Streams: the gateway always asks an upstream for usage in the stream
// (stream_options.include_usage, and Brisk's continuous_usage_stats so every
// chunk carries the counts so far: a client that goes away mid-stream is
// charged exactly for what was generated). StreamRewriter takes the upstream's
// SSE bytes, tracks usage, the first token and the finish reason, and gives
// back the events the client asked for: usage only where the client asked for
// it, the gateway's cost added to the final usage chunk, "[DONE]" held back
// until the gateway has written its ledger row.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/cost.h"
#include "http/openai_answer.h"
#include "http/sse.h"

namespace brisk::gateway {

using http::AnswerFacts;
using http::ReadAnswer;
using http::ReadChunk;

struct ClientWants {
  bool include_usage = false;     // stream_options.include_usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats (Brisk, vLLM)
  bool logprobs = false;          // the client asked for logprobs itself
};

// The gateway's additions to a usage object: {"cost_usd", "tier", ...}.
struct CostAnnotation {
  double cost_usd = 0;
  std::string tier;
  int escalations = 0;
};

// What the gateway sets in a Responses API object that the engine could not
// know: the engine was sent the whole conversation, with store false.
struct ResponsePatch {
  bool store = false;
  std::string previous_response_id;  // "" = null
};

// Sets `patch`'s fields in a response object and, with `cost`, adds the
// gateway's cost fields to its usage.
void PatchResponse(nlohmann::json* response, const ResponsePatch& patch,
                   const CostAnnotation* cost);
// Reads a response object's usage (input_tokens, its cached_tokens,
// output_tokens), its ending ("stop", or "length" for max_output_tokens) and
// the text of its message items.
AnswerFacts ReadResponseObject(const nlohmann::json& response);

class StreamRewriter {
 public:
  explicit StreamRewriter(ClientWants wants) : wants_(wants) {}
  // A Responses API stream: every event passes (its response object patched),
  // the final one (response.completed, .incomplete or .failed) is held for
  // Finish(), which adds the cost to its usage; no "[DONE]".
  explicit StreamRewriter(ResponsePatch patch) : responses_(true), patch_(std::move(patch)) {}

  // Feeds upstream bytes; appends the SSE text to forward now to `out`.
  // Returns true once the upstream sent "data: [DONE]" (not forwarded: call
  // Finish() to get it, with the final usage chunk if one is held).
  bool Feed(std::string_view bytes, std::string* out);
  // The held-back tail: the final usage chunk (with `cost` added, when the
  // client asked for usage) and "data: [DONE]\n\n".
  std::string Finish(const CostAnnotation& cost);

  const AnswerFacts& facts() const { return facts_; }
  // True once an event that reaches the client was produced (retries are no
  // longer allowed after that).
  bool started() const { return started_; }
  // A Responses stream's final response object once Finish() ran (patched,
  // with cost), or null.
  const nlohmann::json* final_response() const {
    return final_event_ ? &(*final_event_)["response"] : nullptr;
  }

 private:
  void Event(const http::SseEvent& ev, std::string* out);
  void ResponsesEvent(const http::SseEvent& ev, std::string* out);

  ClientWants wants_;
  http::SseParser parser_;
  std::vector<http::SseEvent> events_;
  AnswerFacts facts_;
  std::optional<nlohmann::json> final_usage_chunk_;
  bool done_ = false;
  bool started_ = false;
  const bool responses_ = false;
  const ResponsePatch patch_;
  std::optional<nlohmann::json> final_event_;  // Responses: the held final event
  std::string final_event_name_;
};

// Adds the gateway's cost fields to body["usage"] and, when the client did
// not ask for logprobs, drops the ones the gateway asked for.
void AnnotateAnswer(nlohmann::json* body, const CostAnnotation& cost, bool keep_logprobs);

// A whole chat/completions answer re-sent as a stream (a cascade buffers the
// cheaper tier's answer before it decides): a role chunk, one content chunk
// per choice, the finish chunks, the usage chunk when asked, "[DONE]".
std::string AnswerAsStream(const nlohmann::json& body, bool chat, const ClientWants& wants,
                           const CostAnnotation& cost);

}  // namespace brisk::gateway
