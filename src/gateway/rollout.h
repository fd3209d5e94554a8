// A rollout of a candidate upstream set for one tier, as a pure
// state machine over plain data: the gateway feeds it samples (each finished
// request's arm, status, TTFT, TPOT, structured-output validity) and judge
// scores, and asks it which share of the tier's traffic the candidate gets
// and which share of the baseline's requests is copied to it (shadow). Time
// is passed in, so every transition is tested without sockets or sleeps.
//
// Stages (the gate comes before: a rollout is only created once the
// candidate's passing `brisk eval` report is verified, rollout_manager.h):
//
//   shadow -> canary[0] -> canary[1] -> ... -> promoted
//   any stage before promoted -> rolled_back (a threshold breached)
//                             -> aborted     (an operator said so)
//
// shadow: the caller always gets the baseline's answer; `shadow_share` of
// the tier's requests are also sent to the candidate and the pair is judged.
// canary[i]: `share` of the tier's requests are served by the candidate for
// `duration_s` (shadow copies continue on the baseline's requests). Each
// stage ends when its time is up (shadow also needs `shadow_min_pairs`
// judged pairs), or earlier on `promote`. promoted: the candidate serves
// everything; the baseline stays configured (hot) until the gateway's
// config names the candidate. A breach at any stage before promoted sends
// all new requests to the baseline at once (requests already on the
// candidate finish there).
//
// Thresholds compare the candidate with the baseline over the same sliding
// window (the last `window_s` seconds), each only once both arms have
// `min_samples` samples in it: TTFT p95 and TPOT p95 (ratio plus slack),
// error rate and 429 rate and structured-output failure rate (difference),
// and the judge's score for the candidate (1 win, 0.5 tie, 0 loss), whose
// Wilson upper bound falling below `min_judge_score` means the candidate is
// worse with 95% confidence.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gateway/gateway_config.h"
#include "util/status.h"

namespace brisk::gateway {

using RolloutClock = std::chrono::steady_clock;

enum class RolloutStage { kShadow, kCanary, kPromoted, kRolledBack, kAborted };
std::string_view StageName(RolloutStage s);
// The stage named `name` (StageName's words); nullopt for another word.
std::optional<RolloutStage> StageOfName(std::string_view name);

struct CanaryStep {
  double share = 0;       // of the tier's requests, (0, 1]
  double duration_s = 0;  // > 0
};

struct RolloutThresholds {
  double window_s = 30;
  int64_t min_samples = 10;  // per arm in the window before a comparison counts
  double ttft_p95_ratio = 1.5;
  double ttft_p95_slack_ms = 50;
  double tpot_p95_ratio = 1.5;
  double tpot_p95_slack_ms = 5;
  double max_error_rate_delta = 0.02;
  double max_429_rate_delta = 0.05;
  double max_so_failure_delta = 0.02;
  double min_judge_score = 0.35;  // rollback when the Wilson upper bound is below
  int64_t min_judged = 10;
};

// What `brisk rollout start` asks for (the admin API's JSON body).
struct RolloutSpec {
  std::string tier;
  std::vector<UpstreamConfig> upstreams;  // the candidate set
  std::string model;                      // candidate model id; "" = its /v1/models
  double shadow_share = 0.2;
  double shadow_s = 30;
  int64_t shadow_min_pairs = 10;
  std::vector<CanaryStep> canary = {{0.05, 60}, {0.25, 60}, {0.5, 60}};
  bool auto_promote = true;  // false: stay at the last canary step until `promote`
  RolloutThresholds thresholds;
  nlohmann::json gate_report;  // the candidate's passing `brisk eval golden --save-gate` report
};

// Strict: unknown keys, wrong types and out-of-range values are errors that
// name the field.
Expected<RolloutSpec> ParseRolloutSpec(const nlohmann::json& body);
// For display: no api keys, no gate report.
nlohmann::json RolloutSpecJson(const RolloutSpec& spec);
// Everything ParseRolloutSpec reads back, the candidate upstreams' api keys
// and the gate report included: the shared record (rollout_store.h).
nlohmann::json RolloutSpecRecord(const RolloutSpec& spec);

// One finished request (or failed candidate attempt) of one arm.
struct ArmSample {
  RolloutClock::time_point time;
  int status = 200;     // what that arm answered (5xx and transport failures: 502)
  double ttft_ms = -1;  // -1 when no token came
  double tpot_ms = -1;  // -1 when not measured (one token, or not streamed)
  // Structured output: 1 valid, 0 invalid, -1 not asked for, or cut by
  // max_tokens (the caller's limit, not the server's failure).
  int so_valid = -1;
};

struct ArmStats {
  int64_t n = 0;
  int64_t errors = 0;    // status >= 500
  int64_t rejected = 0;  // status 429
  int64_t so_n = 0;      // samples that asked for structured output
  int64_t so_failed = 0;
  double ttft_p95_ms = -1;  // -1 when no sample has one
  double tpot_p95_ms = -1;
  double error_rate() const { return n ? static_cast<double>(errors) / n : 0; }
  double rejected_rate() const { return n ? static_cast<double>(rejected) / n : 0; }
  double so_failure_rate() const { return so_n ? static_cast<double>(so_failed) / so_n : 0; }
  nlohmann::json ToJson() const;
};

// What the candidate's arm may reach before a rollback, given the baseline's
// window (the limits CheckThresholds compares against; the dashboard shows them).
struct ArmLimits {
  double ttft_p95_ms = -1;  // -1 while the baseline has no p95
  double tpot_p95_ms = -1;
  double error_rate = 0;
  double rate_429 = 0;
  double structured_failure_rate = 0;
  nlohmann::json ToJson() const;
};
ArmLimits LimitsFor(const ArmStats& baseline, const RolloutThresholds& t);

// The samples of one arm over the last window_s seconds.
class ArmWindow {
 public:
  void Add(const ArmSample& s) { samples_.push_back(s); }
  void Trim(RolloutClock::time_point now, double window_s);
  ArmStats Stats() const;

 private:
  std::deque<ArmSample> samples_;
};

// A transition, for the audit log: who (an admin key's name or "auto"),
// what, and for automatic ones the metric, its value and the limit.
struct RolloutDecision {
  std::string action;  // "start" | "advance" | "promote" | "rollback" | "abort"
  std::string who;
  RolloutStage from = RolloutStage::kShadow;
  RolloutStage to = RolloutStage::kShadow;
  int step = -1;       // canary step after the transition (-1 when none)
  std::string metric;  // "" for operator decisions and timed advances
  double value = 0;
  double limit = 0;
  std::string detail;
};

class Rollout {
 public:
  Rollout(std::string id, RolloutSpec spec, std::string started_by, RolloutClock::time_point now);

  const std::string& id() const { return id_; }
  const RolloutSpec& spec() const { return spec_; }
  RolloutStage stage() const { return stage_; }
  int step() const { return step_; }
  bool finished() const {
    return stage_ == RolloutStage::kRolledBack || stage_ == RolloutStage::kAborted;
  }
  // Of the tier's new requests: the share the candidate serves, and the
  // share (of those the baseline serves) copied to the candidate.
  double CandidateShare() const;
  double ShadowShare() const;

  void Record(bool candidate, const ArmSample& s);
  void RecordJudge(double score, bool position_inconsistent);
  // Checks thresholds, then stage timers. A transition is applied and
  // returned (at most one per call).
  std::optional<RolloutDecision> Tick(RolloutClock::time_point now);
  // Operator actions: promote moves to the next stage now; abort sends all
  // traffic to the baseline. InvalidArgument once finished.
  Expected<RolloutDecision> Promote(const std::string& who, RolloutClock::time_point now);
  Expected<RolloutDecision> Abort(const std::string& who, RolloutClock::time_point now);

  nlohmann::json StatusJson(RolloutClock::time_point now);

  // A rollout as its shared record says it is (rollout_store.h): where it
  // stands, and the judge's totals (since the start; in the current stage).
  RolloutClock::time_point started_at() const { return started_at_; }
  RolloutClock::time_point stage_since() const { return stage_since_; }
  void Restore(RolloutStage stage, int step, RolloutClock::time_point started_at,
               RolloutClock::time_point stage_since);
  void SetJudgeTotals(int64_t judged, double score_sum, int64_t position_inconsistent,
                      int64_t stage_pairs);

 private:
  // The first breached threshold, if any.
  std::optional<RolloutDecision> CheckThresholds(RolloutClock::time_point now);
  RolloutDecision MoveTo(RolloutStage to, int step, std::string action, std::string who,
                         RolloutClock::time_point now);
  double StageSeconds() const;

  std::string id_;
  RolloutSpec spec_;
  std::string started_by_;
  RolloutStage stage_ = RolloutStage::kShadow;
  int step_ = -1;
  RolloutClock::time_point started_at_;
  RolloutClock::time_point stage_since_;
  ArmWindow baseline_, candidate_;
  int64_t judged_ = 0;  // since the start
  double judge_sum_ = 0;
  int64_t position_inconsistent_ = 0;
  int64_t stage_pairs_ = 0;  // judged in the current stage
};

}  // namespace brisk::gateway
