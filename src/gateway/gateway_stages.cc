#include "gateway/gateway_stages.h"

#include <algorithm>

#include "gateway/gateway_core.h"
#include "gateway/ledger.h"

namespace brisk::gateway {
namespace {

// The upstream's stages that split the exchange; its `write` and `total`
// are covered by `network` (the gateway cannot place them on its clock).
bool IsEngineStage(std::string_view name) {
  return name == "tokenize" || name == "queue" || name == "prefill" || name == "decode";
}

}  // namespace

GatewayStages::GatewayStages(Clock::time_point arrival, std::string_view traceparent)
    : arrival_(arrival),
      started_(arrival),
      picked_(arrival),
      connected_(arrival),
      upstream_done_(arrival),
      arrival_wall_(
          std::chrono::system_clock::now() -
          std::chrono::duration_cast<std::chrono::system_clock::duration>(Clock::now() - arrival)),
      trace_(StartTrace(traceparent)) {}

void GatewayStages::Picked(Clock::time_point t) {
  picked_ = t;
  connected_ = t;  // until the attempt's connection is ready
  upstream_.clear();
}

void GatewayStages::UpstreamTiming(std::string_view value) {
  std::vector<TimedStage> parsed = ParseServerTiming(value);
  std::erase_if(parsed, [](const TimedStage& s) { return !IsEngineStage(s.name); });
  if (!parsed.empty()) upstream_ = std::move(parsed);
}

std::string GatewayStages::HeadValue(Clock::time_point now) const {
  static constexpr std::string_view kNames[] = {"admission", "route", "connect"};
  const Clock::time_point b[] = {arrival_, started_, picked_, std::min(connected_, now)};
  std::vector<TimedStage> stages = StagesFromBoundaries(kNames, b);
  stages.insert(stages.end(), upstream_.begin(), upstream_.end());
  return FormatServerTiming(stages);
}

const std::vector<TimedStage>& GatewayStages::Finish(Clock::time_point written) {
  static constexpr std::string_view kNames[] = {"admission", "route", "connect", "upstream",
                                                "write"};
  const Clock::time_point b[] = {arrival_, started_, picked_, connected_, upstream_done_, written};
  std::vector<TimedStage> outer = StagesFromBoundaries(kNames, b);
  total_ms_ = StagesTotalMs(outer);
  // The upstream exchange, split by the upstream's own stages; what they do
  // not cover is `network`.
  const double exchange_ms = outer[3].ms;
  double engine_ms = 0;
  for (const TimedStage& s : upstream_) engine_ms += s.ms;
  std::vector<TimedStage> inner = upstream_;
  if (engine_ms > exchange_ms && engine_ms > 0) {
    // Cannot happen on one clock; rounding in the header could: scale down.
    for (TimedStage& s : inner) s.ms *= exchange_ms / engine_ms;
    engine_ms = exchange_ms;
  }
  inner.push_back({"network", exchange_ms - engine_ms});
  stages_.assign(outer.begin(), outer.begin() + 3);
  stages_.insert(stages_.end(), inner.begin(), inner.end());
  stages_.push_back(outer[4]);
  return stages_;
}

std::string GatewayStages::FinishedValue() const { return FormatServerTiming(stages_, total_ms_); }

void GatewayStages::Record(GatewayCore& core, std::string_view name, int status) const {
  if (stages_.empty()) return;
  if (status == 200)
    for (const TimedStage& s : stages_) core.metrics->Stage(s.name)->Observe(s.ms / 1e3);
  if (!core.spans) return;
  RequestSpan span;
  span.trace = trace_;
  span.name = std::string(name);
  span.start = arrival_wall_;
  span.stages = stages_;
  span.total_ms = total_ms_;
  span.http_status = status;
  core.spans->Export(std::move(span));
}

AccessLogRecord AccessRecordOf(const LedgerRow& row) {
  AccessLogRecord r;
  r.request_id = row.request_id;
  r.tenant = row.tenant;
  r.feature = row.feature;
  r.model = row.model;
  r.endpoint = row.endpoint;
  r.status = row.status;
  r.outcome = row.outcome == "completed"                             ? AccessOutcome::kOk
              : row.outcome == "cancelled"                           ? AccessOutcome::kCancelled
              : row.outcome == "rejected" || row.outcome == "budget" ? AccessOutcome::kRejected
              : row.status >= 400 && row.status < 500                ? AccessOutcome::kInvalid
                                                                     : AccessOutcome::kError;
  r.stream = row.stream;
  r.prompt_tokens = row.tokens.prompt;
  r.cached_tokens = row.tokens.cached;
  r.output_tokens = row.tokens.output;
  r.ttft_ms = row.ttft_ms;
  r.total_ms = row.total_ms;
  r.finish_reason = row.finish_reason;
  return r;
}

void GatewayStages::WriteAccess(GatewayCore& core, AccessLogRecord record) const {
  if (!core.access_log || !core.access_log->enabled()) return;
  record.trace_id = trace_.trace_id;
  for (const TimedStage& s : stages_) record.stages.emplace_back(s.name, s.ms);
  if (!stages_.empty()) record.total_ms = total_ms_;
  core.access_log->Write(std::move(record));
}

}  // namespace brisk::gateway
