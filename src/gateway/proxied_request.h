// One client request through the gateway, from its parsed body to its ledger
// row: the tiers of its route plan in order (a cascade escalates), within a
// tier the replicas the picker offers (retries only while nothing reached the
// client), the answer rewritten on its way (usage, cost), and exactly one
// ledger row, committed before the response completes.
//
// Threads: started on an HTTP I/O thread; upstream callbacks run on the
// gateway's upstream threads; the client's disconnect arrives on an I/O
// thread. All state is behind one mutex; Responder and http::UpstreamCall calls
// never block, so they are made while holding it.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gateway/budget.h"
#include "gateway/gateway_core.h"
#include "gateway/gateway_stages.h"
#include "gateway/rollout_manager.h"
#include "gateway/router.h"
#include "gateway/stream_rewriter.h"
#include "grammar/answer_check.h"
#include "http/server.h"

namespace brisk::gateway {

struct Caller {
  std::string tenant;
  std::string key_name;
  std::string feature;
  std::string traceparent;  // the client's W3C traceparent header ("" if none)
};

enum class Endpoint { kChat, kCompletions, kResponses, kTokenize, kDetokenize };

// The upstream path ("/v1/chat/completions", ...), the ledger's endpoint
// name ("chat.completions", "responses", "tokenize", ...).
const char* EndpointPath(Endpoint e);
const char* EndpointName(Endpoint e);

// A Responses API request's conversation (gateway/shared_responses.h): what
// the request continues and what is stored once it is answered.
struct ResponsesTurn {
  bool store = true;                 // the client's `store` (default true)
  std::string previous_response_id;  // "" = none
  nlohmann::ordered_json history = nlohmann::ordered_json::array();      // the stored conversation
  nlohmann::ordered_json input_items = nlohmann::ordered_json::array();  // this input, with ids
};

class ProxiedRequest : public std::enable_shared_from_this<ProxiedRequest> {
 public:
  // `body` is the client's JSON object (validated: model is a string).
  ProxiedRequest(std::shared_ptr<GatewayCore> core, std::shared_ptr<http::Responder> res,
                 Endpoint endpoint, nlohmann::json body, Caller caller, RoutePlan plan,
                 uint64_t affinity_key, std::chrono::steady_clock::time_point arrival,
                 std::string request_id, std::shared_ptr<const ResponsesTurn> turn = nullptr);
  // `reservation`: what admission reserved against the caller's budgets
  // (settled by the request's cost when it ends).
  void Start(Budgets::Reservation reservation = {});

 private:
  using Clock = std::chrono::steady_clock;

  // Sends to the next replica of the current tier (or the next tier, or
  // answers the client when there is none).
  void TryNext();
  // Runs an upstream callback; an exception ends the request with a 502.
  void Guarded(const std::function<void()>& step);
  void OnHead(int attempt, int status, const http::Headers& headers);
  void OnData(int attempt, std::string_view data);
  void OnDone(int attempt, const Status& status);
  void OnClientGone();
  // The current attempt's answer was buffered whole (non-stream, or a
  // cascade tier before the last): judge it, escalate or deliver.
  void OnBufferedAnswer();
  bool ShouldEscalate(const AnswerFacts& facts, std::string* why) const;
  void Escalate(const std::string& why);
  // Charge the current attempt's tokens at its tier's prices.
  void ChargeAttempt(const AnswerFacts& facts);
  nlohmann::json UpstreamBody(bool stream) const;
  bool LastTier() const { return tier_pos_ + 1 >= static_cast<int>(plan_.tiers.size()); }
  TierRuntime& Tier() const;
  // Ends the request: the stored response (Responses API, `store`), the
  // ledger row, then `respond` once both are durable.
  void Finish(int status, const std::string& outcome, std::function<void()> respond);
  void WriteLedgerRow(LedgerRow row, std::function<void()> respond);
  ResponsePatch Patch() const;
  // Whether the response object `response` is to be stored, and its record.
  bool ShouldStore(const nlohmann::json* response) const;
  void SendError(int status, std::string_view type, std::string_view message, std::string_view code,
                 http::Headers extra = {});
  CostAnnotation Annotation() const;
  // Rollouts (rollout_manager.h): which arm of the current tier serves this
  // request, and the shadow copy sent to the candidate, if any.
  void EnterTier();
  // The candidate had no replica left to try before any byte reached the
  // client: that counts against it, and the baseline answers instead.
  void FallBackToBaseline();
  void RecordArm(int status, double ttft_ms, double tpot_ms);

  std::shared_ptr<GatewayCore> core_;
  std::shared_ptr<http::Responder> res_;
  const Endpoint endpoint_;
  const nlohmann::json body_;
  const Caller caller_;
  const RoutePlan plan_;
  const uint64_t affinity_key_;
  const Clock::time_point arrival_;
  const std::string request_id_;
  const bool client_stream_;
  const ClientWants wants_;
  const AnswerCheck answer_check_;  // the response_format test a cascade tier's answer must pass
  const std::shared_ptr<const ResponsesTurn> turn_;  // kResponses only
  Budgets::Reservation reservation_;
  std::optional<nlohmann::json> stored_response_;  // the answer to store (kResponses)

  // Recursive: an upstream client may call back from inside Send().
  std::recursive_mutex mu_;
  int tier_pos_ = 0;
  int attempt_ = 0;         // increments per upstream call; stale callbacks are ignored
  int replica_ = -1;        // of the current attempt
  std::vector<int> tried_;  // replicas of the current tier tried
  int tier_attempts_ = 0;
  int total_attempts_ = 0;
  int escalations_ = 0;
  double min_retry_after_s_ = -1;  // from replicas that said 429
  int last_status_ = 0;
  std::string last_error_;
  bool buffering_ = false;  // this attempt's answer is buffered (not streamed to the client)
  bool head_ok_ = false;
  int upstream_status_ = 0;
  http::Headers upstream_headers_;
  std::string buffer_;
  std::unique_ptr<StreamRewriter> rewriter_;
  std::shared_ptr<http::UpstreamCall> call_;
  bool client_started_ = false;  // bytes reached the client: no more retries
  bool finished_ = false;
  bool client_gone_ = false;
  Clock::time_point first_token_{};
  TokenCounts tokens_;  // every charged attempt so far
  double cost_usd_ = 0;
  std::string finish_reason_;
  std::string answer_tier_;
  std::string answer_upstream_;
  RolloutArm arm_;
  bool on_candidate_ = false;
  std::shared_ptr<ShadowPair> shadow_;
  int64_t shadow_seed_ = -1;  // set on both copies of a shadowed request without a seed
  std::string answer_text_;   // the answer's text, for the shadow pair and the output check
  GatewayStages stages_;      // latency budget and trace context (Server-Timing, traceparent)
  // Precise prefix routing (prefix_routing.h): the replicas' cached prefixes
  // of this prompt in the current tier, looked up once per tier before its
  // first pick (the lookup counts in the `route` stage).
  std::optional<PrefixMatch> prefix_;
  int prefix_tier_pos_ = -1;  // the tier position prefix_ belongs to
  bool prefix_pending_ = false;
  std::shared_ptr<http::UpstreamCall> prefix_call_;
  std::shared_ptr<boost::asio::steady_timer> prefix_timer_;
  // Whether the current tier's prefix lookup is still to do; if so, starts
  // it (it calls TryNext when done or given up on).
  bool LookUpPrefix();
  void PrefixLookedUp(Expected<std::pair<int, std::string>> answer, const char* result);
  // The prompt tokens the chosen replica holds, against the prompt's (metrics).
  void CountCachedPrefix(const PrefixMatch& prefix, int replica);
  // The head of the client's stream: ids, route, the stages so far, our
  // traceparent, and the Trailer announcing the full Server-Timing.
  http::Headers StreamHeaders();
  // At the answer's last bytes: the whole budget (metrics, spans), as the
  // Server-Timing value. Called from Finish()'s respond, without mu_: once
  // finished_ is set nothing else touches stages_.
  std::string FinishStages(int status);
};

}  // namespace brisk::gateway
