// ProxiedRequest's part in rollouts (gateway/rollout_manager.h): which arm
// of a tier serves the request, its shadow copy, its samples.
#include <random>

#include "gateway/judge.h"
#include "gateway/proxied_request.h"
#include "util/log.h"

namespace brisk::gateway {

namespace {

double Dice() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0, 1)(rng);
}

}  // namespace

void ProxiedRequest::EnterTier() {
  arm_ = core_->rollouts->Assign(plan_.tiers[tier_pos_], Dice(), Dice());
  on_candidate_ = arm_.candidate != nullptr;
  // Shadow only the tier whose answer the caller gets (the last of a
  // cascade), so the pair compares what a caller would have seen.
  if (!arm_.shadow || !LastTier()) return;
  // Shadow pairs compare chat and completions answers (judge.h).
  if (endpoint_ != Endpoint::kChat && endpoint_ != Endpoint::kCompletions) return;
  if (!body_.contains("seed")) {  // the same seed on both sides: a paired comparison
    shadow_seed_ = static_cast<int64_t>(std::hash<std::string>{}(request_id_)&0x7fffffff);
  }
  shadow_ =
      core_->rollouts->StartShadow(arm_, body_, UpstreamBody(false), endpoint_ == Endpoint::kChat,
                                   request_id_, caller_.tenant, caller_.key_name, caller_.feature);
}

void ProxiedRequest::FallBackToBaseline() {
  RecordArm(min_retry_after_s_ >= 0 ? 429 : 502, -1, -1);
  log::Debug("gateway: request {}: the rollout candidate failed ({}); the baseline answers",
             request_id_, last_error_);
  on_candidate_ = false;
  tried_.clear();
  tier_attempts_ = 0;
  min_retry_after_s_ = -1;
}

void ProxiedRequest::RecordArm(int status, double ttft_ms, double tpot_ms) {
  if (!arm_.rollout) return;
  ArmSample s;
  s.time = RolloutClock::now();
  s.status = status;
  s.ttft_ms = ttft_ms;
  s.tpot_ms = tpot_ms;
  if (status == 200 && finish_reason_ != "length") {
    // An active answer_check_ is the request's json_object / json_schema
    // response_format, compiled for the cascade: the very check
    // StructuredValidity would compile again, so it is reused.
    s.so_valid = answer_check_.active() ? (answer_check_.Check(answer_text_).empty() ? 1 : 0)
                                        : StructuredValidity(body_, answer_text_);
  }
  core_->rollouts->Record(arm_, on_candidate_, s);
}

}  // namespace brisk::gateway
