// RolloutManager's shadow pairs (rollout_manager.h): the copy of a caller's
// request sent to the candidate, its ledger row, the pair judged once both
// answers are in, and the judge's score written as a sample of the rollout.
#include <fmt/format.h>

#include "gateway/cost.h"
#include "gateway/gateway_core.h"
#include "gateway/json_fields.h"
#include "gateway/judge.h"
#include "gateway/rollout_manager.h"
#include "gateway/stream_rewriter.h"
#include "grammar/answer_check.h"

namespace brisk::gateway {

using Json = nlohmann::json;

namespace {

int64_t ShadowWallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct ShadowPair {
  std::mutex mu;
  std::shared_ptr<Rollout> rollout;
  Json request;  // the client's body
  bool baseline_done = false, candidate_done = false, dropped = false;
  std::string baseline, candidate;
};

// --- Shadow pairs. ---

std::shared_ptr<ShadowPair> RolloutManager::StartShadow(const RolloutArm& arm,
                                                        const Json& client_body, Json upstream_body,
                                                        bool chat, const std::string& request_id,
                                                        const std::string& tenant,
                                                        const std::string& key_name,
                                                        const std::string& feature) {
  std::shared_ptr<TierRuntime> cand = CandidateOf(arm.rollout);
  if (!cand || cand->Model().empty()) return nullptr;
  std::optional<int> pick;
  {
    std::lock_guard tl(cand->mu);
    pick = cand->picker.Pick(0, {}, std::chrono::steady_clock::now());
    if (pick) cand->picker.Started(*pick);
  }
  if (!pick) return nullptr;
  auto pair = std::make_shared<ShadowPair>();
  pair->rollout = arm.rollout;
  pair->request = client_body;
  upstream_body["model"] = cand->Model();
  upstream_body["stream"] = false;
  upstream_body.erase("stream_options");
  http::UpstreamRequest req;
  req.path = chat ? "/v1/chat/completions" : "/v1/completions";
  req.headers = {{"Content-Type", "application/json"}, {"X-Request-Id", request_id + "-shadow"}};
  const UpstreamConfig& up = cand->config->upstreams[*pick];
  if (!up.api_key.empty()) req.headers.push_back({"Authorization", "Bearer " + up.api_key});
  req.body = upstream_body.dump(-1, ' ', false, Json::error_handler_t::replace);

  struct Call {
    int status = 0;
    std::string body;
  };
  auto call = std::make_shared<Call>();
  const auto sent = std::chrono::steady_clock::now();
  const int64_t sent_unix_ms = ShadowWallMs();
  const int replica = *pick;
  http::UpstreamCallbacks cb;
  cb.on_head = [call](int status, const http::Headers&) { call->status = status; };
  cb.on_data = [call](std::string_view d) {
    if (call->body.size() < (size_t{16} << 20)) call->body.append(d);
  };
  cb.on_done = [this, call, pair, cand, replica, sent, sent_unix_ms, request_id, tenant, key_name,
                feature, chat, arm](const Status& st) {
    const bool ok = st.ok() && call->status == 200;
    {
      std::lock_guard tl(cand->mu);
      cand->picker.Finished(replica, ok ? RequestOutcome::kOk : RequestOutcome::kFailure,
                            std::chrono::steady_clock::now());
    }
    AnswerFacts facts;
    if (ok) {
      Json answer = Json::parse(call->body, nullptr, false);
      if (answer.is_object()) {
        facts = ReadAnswer(answer);
        facts.text = JudgeAnswerText(answer);  // tool calls too
      }
    }
    ArmSample s;
    s.time = RolloutClock::now();
    s.status = ok ? 200 : (call->status == 429 ? 429 : 502);
    if (ok && facts.finish_reason != "length") {
      s.so_valid = StructuredValidity(pair->request, facts.text);
    }
    Record(arm, true, s);

    LedgerRow row;
    row.time_unix_ms = sent_unix_ms;
    row.request_id = request_id + "-shadow";
    row.tenant = tenant;
    row.api_key_name = key_name;
    row.feature = feature;
    row.tier = cand->config->name;
    row.upstream = cand->names[replica];
    row.model = StringOr(pair->request, "model", "");
    row.endpoint = chat ? "chat.completions" : "completions";
    row.tokens = facts.tokens;
    row.cost_usd = CostUsd(cand->config->prices, facts.tokens);
    row.status = ok ? 200 : (call->status ? call->status : 502);
    row.outcome = ok ? "completed" : "error";
    row.total_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count();
    row.finish_reason = facts.finish_reason;
    row.shadow = true;
    row.rollout = arm.rollout_id;
    core_->ledger->Append(std::move(row), [](const Status&) {});
    core_->registry
        .GetCounter("brisk_gateway_shadow_requests_total",
                    "Shadow copies sent to a rollout's candidate, by tier and outcome.",
                    {{"tier", cand->config->name}, {"outcome", ok ? "completed" : "error"}})
        ->Inc();

    bool both = false;
    {
      std::lock_guard pl(pair->mu);
      pair->candidate_done = true;
      pair->dropped = pair->dropped || !ok;
      pair->candidate = std::move(facts.text);
      both = pair->baseline_done;
    }
    if (both) Judged(pair);
  };
  cand->clients[replica]->Send(std::move(req), std::move(cb));
  return pair;
}

void RolloutManager::BaselineAnswer(const std::shared_ptr<ShadowPair>& pair, bool ok,
                                    std::string text) {
  if (!pair) return;
  bool both = false;
  {
    std::lock_guard pl(pair->mu);
    if (pair->baseline_done) return;
    pair->baseline_done = true;
    pair->dropped = pair->dropped || !ok;
    pair->baseline = std::move(text);
    both = pair->candidate_done;
  }
  if (both) Judged(pair);
}

Judge* RolloutManager::JudgeFor() {
  // Called with mu_ held. The judge is the configured tier's (default: the
  // last, the largest) first replica, once its model id is known.
  if (judge_) return judge_.get();
  int t = core_->config.rollout.judge_tier.empty()
              ? static_cast<int>(core_->tiers.size()) - 1
              : FindTier(core_->config, core_->config.rollout.judge_tier);
  if (t < 0) return nullptr;
  TierRuntime& tier = *core_->tiers[t];
  std::string model = tier.Model();
  if (model.empty()) return nullptr;
  JudgeOptions opts;
  opts.api_key = tier.config->upstreams[0].api_key;
  opts.batch_priority = tier.config->upstreams[0].type == "brisk";
  judge_ = std::make_unique<Judge>(tier.clients[0].get(), model, opts);
  return judge_.get();
}

void RolloutManager::Judged(const std::shared_ptr<ShadowPair>& pair) {
  if (pair->dropped) return;
  JudgePair jp;
  jp.request = pair->request;
  jp.baseline = pair->baseline;
  jp.candidate = pair->candidate;
  auto done = [this, pair](const JudgeVerdict& v) {
    if (!v.Decided()) return;  // the judge failed: no score either way
    StoredSample s;
    s.judge = true;
    s.candidate = true;
    s.time_ms = ShadowWallMs();
    s.score = v.Score();
    s.inconsistent = v.position_inconsistent;
    {
      std::lock_guard lock(mu_);
      outbox_.emplace_back(pair->rollout->id(), s);
    }
    ScheduleSync();
  };
  JudgeVerdict checked = CheckPair(jp);
  Judge* judge = nullptr;
  {
    std::lock_guard lock(mu_);
    if (NeedsLlm(checked)) judge = JudgeFor();
    // The LLM judge's two calls (a long prompt each) land on the judge
    // tier, which may serve callers too: one pair at a time, the others
    // are scored by structure and agreement only (undecided ones dropped).
    if (judge != nullptr && judge_busy_) {
      ++judge_skipped_;
      judge = nullptr;
    }
    if (judge != nullptr) judge_busy_ = true;
  }
  if (judge == nullptr) {
    done(checked);
    return;
  }
  judge->Score(std::move(jp), [this, done](JudgeVerdict v) {
    {
      std::lock_guard lock(mu_);
      judge_busy_ = false;
    }
    done(v);
  });
}

}  // namespace brisk::gateway
