// How a ProxiedRequest ends (proxied_request.h): the stored response (the
// Responses API's `store`), the budget settlement, metrics, rollout samples,
// the ledger row, and the answer's last bytes once they are durable.
#include <fmt/format.h>

#include <boost/asio/post.hpp>

#include "gateway/budget.h"
#include "gateway/dashboard.h"
#include "gateway/json_fields.h"
#include "gateway/proxied_request.h"
#include "gateway/shared_responses.h"
#include "http/responses_items.h"
#include "util/log.h"

namespace brisk::gateway {

using Json = nlohmann::json;

void ProxiedRequest::Finish(int status, const std::string& outcome, std::function<void()> respond) {
  if (finished_) return;
  finished_ = true;
  const double total_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - arrival_).count();
  const double ttft_ms =
      first_token_ == Clock::time_point{}
          ? -1
          : std::chrono::duration<double, std::milli>(first_token_ - arrival_).count();
  const std::string tier_name = answer_tier_.empty() ? Tier().config->name : answer_tier_;
  LedgerRow row;
  row.time_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count() -
                     static_cast<int64_t>(total_ms);
  row.request_id = request_id_;
  row.tenant = caller_.tenant;
  row.api_key_name = caller_.key_name;
  row.feature = caller_.feature;
  row.tier = tier_name;
  row.upstream =
      answer_upstream_.empty() && replica_ >= 0 ? Tier().names[replica_] : answer_upstream_;
  row.model = StringOr(body_, "model", "");
  row.endpoint = EndpointName(endpoint_);
  row.tokens = tokens_;
  row.cost_usd = cost_usd_;
  row.status = status;
  row.outcome = outcome;
  row.stream = client_stream_;
  row.ttft_ms = ttft_ms;
  row.total_ms = total_ms;
  row.attempts = total_attempts_;
  row.escalations = escalations_;
  row.finish_reason = finish_reason_;
  if (on_candidate_) row.rollout = arm_.rollout_id;

  GatewayMetrics& m = *core_->metrics;
  m.Requests(tier_name, caller_.feature, outcome)->Inc();
  if (cost_usd_ > 0) m.Cost(tier_name, caller_.feature)->Inc(cost_usd_);
  m.Tokens(tier_name, caller_.feature, "input")
      ->Inc(static_cast<double>(tokens_.prompt - tokens_.cached));
  m.Tokens(tier_name, caller_.feature, "cached_input")->Inc(static_cast<double>(tokens_.cached));
  m.Tokens(tier_name, caller_.feature, "output")->Inc(static_cast<double>(tokens_.output));
  // Token spacing exists only in a live stream.
  const double tpot_ms = ttft_ms >= 0 && tokens_.output > 1 && rewriter_
                             ? (total_ms - ttft_ms) / static_cast<double>(tokens_.output - 1)
                             : -1;
  if (outcome == "completed") {
    m.EndToEnd(tier_name)->Observe(total_ms / 1000);
    if (ttft_ms >= 0) m.Ttft(tier_name)->Observe(ttft_ms / 1000);
    if (tpot_ms >= 0) m.Tpot(tier_name)->Observe(tpot_ms / 1000);
  }
  const bool generates = endpoint_ != Endpoint::kTokenize && endpoint_ != Endpoint::kDetokenize;
  if (outcome != "cancelled" && generates) RecordArm(status, ttft_ms, tpot_ms);
  if (shadow_) {
    core_->rollouts->BaselineAnswer(shadow_, status == 200 && outcome == "completed", answer_text_);
  }
  if (core_->budgets) {
    // Off the upstream threads: the settlement waits on the database.
    boost::asio::post(core_->db_io, [core = core_, r = reservation_, key = caller_.key_name,
                                     feature = caller_.feature, cost = cost_usd_,
                                     t = row.time_unix_ms] {
      core->budgets->Settle(r, key, feature, cost,
                            std::chrono::system_clock::time_point(std::chrono::milliseconds(t)));
    });
  }
  if (core_->dashboard) core_->dashboard->Record(row);
  core_->active.fetch_sub(1);
  if (stored_response_ && core_->responses) {
    // The stored response is readable before the answer completes, so a
    // follow-up sent the moment it arrives finds it (through any gateway).
    // Off the upstream threads: the database may be slow or away.
    auto record = std::make_shared<StoredResponseText>();
    nlohmann::ordered_json conversation = turn_->history;
    for (const auto& item : turn_->input_items) conversation.push_back(item);
    const nlohmann::ordered_json response_o = nlohmann::ordered_json::parse(
        stored_response_->dump(-1, ' ', false, Json::error_handler_t::replace), nullptr, false);
    for (auto& item : http::OutputAsInput(response_o.value("output", nlohmann::ordered_json())))
      conversation.push_back(std::move(item));
    record->response = stored_response_->dump(-1, ' ', false, Json::error_handler_t::replace);
    record->input_items = turn_->input_items.dump(-1, ' ', false, Json::error_handler_t::replace);
    record->conversation = conversation.dump(-1, ' ', false, Json::error_handler_t::replace);
    const std::string response_id = StringOr(*stored_response_, "id", "");
    boost::asio::post(core_->db_io, [self = shared_from_this(), record, response_id,
                                     row = std::move(row), respond = std::move(respond)]() mutable {
      const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
      Status st = self->core_->responses->Put(self->caller_.tenant, response_id, *record, now_ms);
      if (!st.ok()) {
        self->core_->metrics->StoreErrors()->Inc();
        log::Error("gateway: response {} of request {} not stored: {}", response_id,
                   self->request_id_, st.message());
      }
      self->WriteLedgerRow(std::move(row), std::move(respond));
    });
    return;
  }
  WriteLedgerRow(std::move(row), std::move(respond));
}

ResponsePatch ProxiedRequest::Patch() const {
  ResponsePatch p;
  if (turn_) {
    p.store = turn_->store;
    p.previous_response_id = turn_->previous_response_id;
  }
  return p;
}

bool ProxiedRequest::ShouldStore(const Json* response) const {
  return turn_ && turn_->store && response != nullptr && response->is_object() &&
         !StringOr(*response, "id", "").empty();
}

void ProxiedRequest::WriteLedgerRow(LedgerRow row, std::function<void()> respond) {
  const std::string id = request_id_;
  // The access line waits for the answer: its stages end when respond() ran.
  AccessLogRecord access = AccessRecordOf(row);
  core_->ledger->Append(
      std::move(row), [respond = std::move(respond), id, self = shared_from_this(),
                       access = std::move(access)](const Status& st) mutable {
        if (!st.ok())
          log::Error("gateway: ledger row of request {} not written: {}", id, st.message());
        respond();
        self->stages_.WriteAccess(*self->core_, std::move(access));
      });
}

http::Headers ProxiedRequest::StreamHeaders() {
  return {{"Content-Type", "text/event-stream"},
          {"X-Request-Id", request_id_},
          {"X-Brisk-Tier", answer_tier_},
          {"X-Brisk-Upstream", answer_upstream_},
          {"X-Brisk-Route", plan_.reason},
          {"traceparent", stages_.trace().Traceparent()},
          {"Server-Timing", stages_.HeadValue(Clock::now())},
          {"Trailer", "Server-Timing"}};
}

std::string ProxiedRequest::FinishStages(int status) {
  stages_.Finish(Clock::now());
  stages_.Record(*core_, fmt::format("POST {}", EndpointPath(endpoint_)), status);
  return stages_.FinishedValue();
}

}  // namespace brisk::gateway
