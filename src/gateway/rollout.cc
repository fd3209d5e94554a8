#include "gateway/rollout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "gateway/judge.h"

namespace brisk::gateway {

using Json = nlohmann::json;

std::string_view StageName(RolloutStage s) {
  switch (s) {
    case RolloutStage::kShadow: return "shadow";
    case RolloutStage::kCanary: return "canary";
    case RolloutStage::kPromoted: return "promoted";
    case RolloutStage::kRolledBack: return "rolled_back";
    case RolloutStage::kAborted: return "aborted";
  }
  return "?";
}

std::optional<RolloutStage> StageOfName(std::string_view name) {
  for (RolloutStage s : {RolloutStage::kShadow, RolloutStage::kCanary, RolloutStage::kPromoted,
                         RolloutStage::kRolledBack, RolloutStage::kAborted}) {
    if (StageName(s) == name) return s;
  }
  return std::nullopt;
}

namespace {

// Reads the keys of `obj` into fields, refusing keys it does not know.
class FieldReader {
 public:
  FieldReader(const Json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  Status Number(const char* key, double* out, double lo, double hi) {
    seen_.insert(key);
    auto it = obj_.find(key);
    if (it == obj_.end()) return Status::Ok();
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < lo ||
        it->get<double>() > hi) {
      return InvalidArgument("{}{}: expected a number in [{}, {}]", where_, key, lo, hi);
    }
    *out = it->get<double>();
    return Status::Ok();
  }
  Status Int(const char* key, int64_t* out, int64_t lo, int64_t hi) {
    double d = static_cast<double>(*out);
    RETURN_IF_ERROR(Number(key, &d, static_cast<double>(lo), static_cast<double>(hi)));
    if (d != std::floor(d)) return InvalidArgument("{}{}: expected an integer", where_, key);
    *out = static_cast<int64_t>(d);
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) {
    seen_.insert(key);
    auto it = obj_.find(key);
    if (it == obj_.end()) return Status::Ok();
    if (!it->is_boolean()) return InvalidArgument("{}{}: expected true or false", where_, key);
    *out = it->get<bool>();
    return Status::Ok();
  }
  Status String(const char* key, std::string* out) {
    seen_.insert(key);
    auto it = obj_.find(key);
    if (it == obj_.end()) return Status::Ok();
    if (!it->is_string()) return InvalidArgument("{}{}: expected a string", where_, key);
    *out = it->get<std::string>();
    return Status::Ok();
  }
  const Json* Raw(const char* key) {
    seen_.insert(key);
    auto it = obj_.find(key);
    return it == obj_.end() ? nullptr : &*it;
  }
  Status NoOthers() const {
    for (const auto& [k, v] : obj_.items()) {
      if (!seen_.contains(k)) return InvalidArgument("{}{}: unknown field", where_, k);
    }
    return Status::Ok();
  }

 private:
  const Json& obj_;
  std::string where_;
  std::set<std::string, std::less<>> seen_;
};

Status ReadThresholds(const Json& j, RolloutThresholds* t) {
  if (!j.is_object()) return InvalidArgument("thresholds: expected an object");
  FieldReader r(j, "thresholds.");
  RETURN_IF_ERROR(r.Number("window_s", &t->window_s, 1, 3600));
  RETURN_IF_ERROR(r.Int("min_samples", &t->min_samples, 1, 1000000));
  RETURN_IF_ERROR(r.Number("ttft_p95_ratio", &t->ttft_p95_ratio, 1, 1000));
  RETURN_IF_ERROR(r.Number("ttft_p95_slack_ms", &t->ttft_p95_slack_ms, 0, 1e6));
  RETURN_IF_ERROR(r.Number("tpot_p95_ratio", &t->tpot_p95_ratio, 1, 1000));
  RETURN_IF_ERROR(r.Number("tpot_p95_slack_ms", &t->tpot_p95_slack_ms, 0, 1e6));
  RETURN_IF_ERROR(r.Number("max_error_rate_delta", &t->max_error_rate_delta, 0, 1));
  RETURN_IF_ERROR(r.Number("max_429_rate_delta", &t->max_429_rate_delta, 0, 1));
  RETURN_IF_ERROR(r.Number("max_so_failure_delta", &t->max_so_failure_delta, 0, 1));
  RETURN_IF_ERROR(r.Number("min_judge_score", &t->min_judge_score, 0, 1));
  RETURN_IF_ERROR(r.Int("min_judged", &t->min_judged, 1, 1000000));
  return r.NoOthers();
}

}  // namespace

Expected<RolloutSpec> ParseRolloutSpec(const Json& body) {
  if (!body.is_object()) return InvalidArgument("the rollout is not a JSON object");
  RolloutSpec spec;
  FieldReader r(body, "");
  RETURN_IF_ERROR(r.String("tier", &spec.tier));
  if (spec.tier.empty()) return InvalidArgument("tier: required (the tier to roll out to)");
  RETURN_IF_ERROR(r.String("model", &spec.model));
  const Json* ups = r.Raw("upstreams");
  if (ups == nullptr || !ups->is_array() || ups->empty()) {
    return InvalidArgument("upstreams: required, a non-empty list of {{url, type, api_key}}");
  }
  for (size_t i = 0; i < ups->size(); ++i) {
    const Json& u = (*ups)[i];
    UpstreamConfig uc;
    if (u.is_string()) {
      uc.url = u.get<std::string>();
    } else if (u.is_object()) {
      FieldReader ur(u, fmt::format("upstreams[{}].", i));
      RETURN_IF_ERROR(ur.String("url", &uc.url));
      RETURN_IF_ERROR(ur.String("type", &uc.type));
      RETURN_IF_ERROR(ur.String("api_key", &uc.api_key));
      RETURN_IF_ERROR(ur.NoOthers());
    } else {
      return InvalidArgument("upstreams[{}]: expected a URL or {{url, type, api_key}}", i);
    }
    if (!uc.url.starts_with("http://")) {
      return InvalidArgument("upstreams[{}].url: expected http://host:port, got '{}'", i, uc.url);
    }
    if (uc.type != "brisk" && uc.type != "openai") {
      return InvalidArgument("upstreams[{}].type: expected brisk or openai", i);
    }
    spec.upstreams.push_back(std::move(uc));
  }
  if (const Json* sh = r.Raw("shadow")) {
    if (!sh->is_object())
      return InvalidArgument("shadow: expected {{share, duration_s, min_pairs}}");
    FieldReader sr(*sh, "shadow.");
    RETURN_IF_ERROR(sr.Number("share", &spec.shadow_share, 0, 1));
    RETURN_IF_ERROR(sr.Number("duration_s", &spec.shadow_s, 0, 7 * 86400));
    RETURN_IF_ERROR(sr.Int("min_pairs", &spec.shadow_min_pairs, 0, 1000000));
    RETURN_IF_ERROR(sr.NoOthers());
  }
  if (const Json* steps = r.Raw("canary")) {
    if (!steps->is_array() || steps->empty()) {
      return InvalidArgument("canary: expected a non-empty list of {{share, duration_s}}");
    }
    spec.canary.clear();
    double prev = 0;
    for (size_t i = 0; i < steps->size(); ++i) {
      if (!(*steps)[i].is_object()) return InvalidArgument("canary[{}]: expected an object", i);
      CanaryStep st;
      FieldReader cr((*steps)[i], fmt::format("canary[{}].", i));
      RETURN_IF_ERROR(cr.Number("share", &st.share, 0, 1));
      RETURN_IF_ERROR(cr.Number("duration_s", &st.duration_s, 0, 7 * 86400));
      RETURN_IF_ERROR(cr.NoOthers());
      if (st.share <= prev) {
        return InvalidArgument("canary[{}].share: each step's share must exceed the last's", i);
      }
      prev = st.share;
      spec.canary.push_back(st);
    }
  }
  RETURN_IF_ERROR(r.Bool("auto_promote", &spec.auto_promote));
  if (const Json* th = r.Raw("thresholds")) RETURN_IF_ERROR(ReadThresholds(*th, &spec.thresholds));
  if (const Json* g = r.Raw("gate_report")) spec.gate_report = *g;
  if (!spec.gate_report.is_object()) {
    return InvalidArgument(
        "gate_report: required, the candidate's passing `brisk eval golden --save-gate` report");
  }
  RETURN_IF_ERROR(r.NoOthers());
  return spec;
}

Json RolloutSpecRecord(const RolloutSpec& s) {
  Json j = RolloutSpecJson(s);
  for (size_t i = 0; i < s.upstreams.size(); ++i) {
    if (!s.upstreams[i].api_key.empty()) j["upstreams"][i]["api_key"] = s.upstreams[i].api_key;
  }
  j["gate_report"] = s.gate_report;
  return j;
}

Json RolloutSpecJson(const RolloutSpec& s) {
  Json ups = Json::array();
  for (const UpstreamConfig& u : s.upstreams) ups.push_back({{"url", u.url}, {"type", u.type}});
  Json steps = Json::array();
  for (const CanaryStep& c : s.canary) {
    steps.push_back({{"share", c.share}, {"duration_s", c.duration_s}});
  }
  const RolloutThresholds& t = s.thresholds;
  return {
      {"tier", s.tier},
      {"model", s.model},
      {"upstreams", ups},
      {"shadow",
       {{"share", s.shadow_share}, {"duration_s", s.shadow_s}, {"min_pairs", s.shadow_min_pairs}}},
      {"canary", steps},
      {"auto_promote", s.auto_promote},
      {"thresholds",
       {{"window_s", t.window_s},
        {"min_samples", t.min_samples},
        {"ttft_p95_ratio", t.ttft_p95_ratio},
        {"ttft_p95_slack_ms", t.ttft_p95_slack_ms},
        {"tpot_p95_ratio", t.tpot_p95_ratio},
        {"tpot_p95_slack_ms", t.tpot_p95_slack_ms},
        {"max_error_rate_delta", t.max_error_rate_delta},
        {"max_429_rate_delta", t.max_429_rate_delta},
        {"max_so_failure_delta", t.max_so_failure_delta},
        {"min_judge_score", t.min_judge_score},
        {"min_judged", t.min_judged}}}};
}

// --- Windows. ---

void ArmWindow::Trim(RolloutClock::time_point now, double window_s) {
  const auto cutoff = now - std::chrono::duration_cast<RolloutClock::duration>(
                                std::chrono::duration<double>(window_s));
  while (!samples_.empty() && samples_.front().time < cutoff) samples_.pop_front();
}

namespace {

// Nearest-rank p95 of the values >= 0; -1 when there are none.
double P95(std::vector<double> v) {
  if (v.empty()) return -1;
  const size_t rank = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + (rank - 1), v.end());
  return v[rank - 1];
}

}  // namespace

ArmStats ArmWindow::Stats() const {
  ArmStats s;
  std::vector<double> ttft, tpot;
  for (const ArmSample& x : samples_) {
    ++s.n;
    if (x.status >= 500) ++s.errors;
    if (x.status == 429) ++s.rejected;
    if (x.so_valid >= 0) {
      ++s.so_n;
      if (x.so_valid == 0) ++s.so_failed;
    }
    if (x.ttft_ms >= 0) ttft.push_back(x.ttft_ms);
    if (x.tpot_ms >= 0) tpot.push_back(x.tpot_ms);
  }
  s.ttft_p95_ms = P95(std::move(ttft));
  s.tpot_p95_ms = P95(std::move(tpot));
  return s;
}

Json ArmStats::ToJson() const {
  return {{"requests", n},
          {"error_rate", error_rate()},
          {"rate_429", rejected_rate()},
          {"structured_requests", so_n},
          {"structured_failure_rate", so_failure_rate()},
          {"ttft_p95_ms", ttft_p95_ms},
          {"tpot_p95_ms", tpot_p95_ms}};
}

// --- The state machine. ---

Rollout::Rollout(std::string id, RolloutSpec spec, std::string started_by,
                 RolloutClock::time_point now)
    : id_(std::move(id)),
      spec_(std::move(spec)),
      started_by_(std::move(started_by)),
      started_at_(now),
      stage_since_(now) {
  if (spec_.shadow_share <= 0 || (spec_.shadow_s <= 0 && spec_.shadow_min_pairs <= 0)) {
    stage_ = RolloutStage::kCanary;  // no shadow stage asked for
    step_ = 0;
  }
}

double Rollout::CandidateShare() const {
  if (stage_ == RolloutStage::kPromoted) return 1;
  if (stage_ == RolloutStage::kCanary) return spec_.canary[step_].share;
  return 0;
}

double Rollout::ShadowShare() const {
  return stage_ == RolloutStage::kShadow || stage_ == RolloutStage::kCanary ? spec_.shadow_share
                                                                            : 0;
}

void Rollout::Record(bool candidate, const ArmSample& s) {
  (candidate ? candidate_ : baseline_).Add(s);
}

void Rollout::Restore(RolloutStage stage, int step, RolloutClock::time_point started_at,
                      RolloutClock::time_point stage_since) {
  stage_ = stage;
  step_ = stage == RolloutStage::kCanary
              ? std::clamp(step, 0, static_cast<int>(spec_.canary.size()) - 1)
              : step;
  started_at_ = started_at;
  stage_since_ = stage_since;
}

void Rollout::SetJudgeTotals(int64_t judged, double score_sum, int64_t position_inconsistent,
                             int64_t stage_pairs) {
  judged_ = judged;
  judge_sum_ = score_sum;
  position_inconsistent_ = position_inconsistent;
  stage_pairs_ = stage_pairs;
}

void Rollout::RecordJudge(double score, bool position_inconsistent) {
  ++judged_;
  ++stage_pairs_;
  judge_sum_ += score;
  if (position_inconsistent) ++position_inconsistent_;
}

double Rollout::StageSeconds() const {
  if (stage_ == RolloutStage::kShadow) return spec_.shadow_s;
  if (stage_ == RolloutStage::kCanary) return spec_.canary[step_].duration_s;
  return 0;
}

RolloutDecision Rollout::MoveTo(RolloutStage to, int step, std::string action, std::string who,
                                RolloutClock::time_point now) {
  RolloutDecision d;
  d.action = std::move(action);
  d.who = std::move(who);
  d.from = stage_;
  d.to = to;
  d.step = step;
  stage_ = to;
  step_ = step;
  stage_since_ = now;
  stage_pairs_ = 0;
  return d;
}

ArmLimits LimitsFor(const ArmStats& b, const RolloutThresholds& t) {
  ArmLimits l;
  if (b.ttft_p95_ms >= 0) l.ttft_p95_ms = b.ttft_p95_ms * t.ttft_p95_ratio + t.ttft_p95_slack_ms;
  if (b.tpot_p95_ms >= 0) l.tpot_p95_ms = b.tpot_p95_ms * t.tpot_p95_ratio + t.tpot_p95_slack_ms;
  l.error_rate = b.error_rate() + t.max_error_rate_delta;
  l.rate_429 = b.rejected_rate() + t.max_429_rate_delta;
  l.structured_failure_rate = b.so_failure_rate() + t.max_so_failure_delta;
  return l;
}

Json ArmLimits::ToJson() const {
  auto or_null = [](double v) { return v >= 0 ? Json(v) : Json(nullptr); };
  return {{"ttft_p95_ms", or_null(ttft_p95_ms)},
          {"tpot_p95_ms", or_null(tpot_p95_ms)},
          {"error_rate", error_rate},
          {"rate_429", rate_429},
          {"structured_failure_rate", structured_failure_rate}};
}

std::optional<RolloutDecision> Rollout::CheckThresholds(RolloutClock::time_point now) {
  const RolloutThresholds& t = spec_.thresholds;
  baseline_.Trim(now, t.window_s);
  candidate_.Trim(now, t.window_s);
  const ArmStats b = baseline_.Stats();
  const ArmStats c = candidate_.Stats();
  std::optional<RolloutDecision> breach;
  auto check = [&](const char* metric, double value, double limit, std::string detail) {
    if (breach || !(value > limit)) return;
    breach = RolloutDecision{};
    breach->metric = metric;
    breach->value = value;
    breach->limit = limit;
    breach->detail = std::move(detail);
  };
  const ArmLimits l = LimitsFor(b, t);
  if (b.n >= t.min_samples && c.n >= t.min_samples) {
    if (l.ttft_p95_ms >= 0 && c.ttft_p95_ms >= 0) {
      check("ttft_p95_ms", c.ttft_p95_ms, l.ttft_p95_ms,
            fmt::format("baseline {:.1f} ms", b.ttft_p95_ms));
    }
    if (l.tpot_p95_ms >= 0 && c.tpot_p95_ms >= 0) {
      check("tpot_p95_ms", c.tpot_p95_ms, l.tpot_p95_ms,
            fmt::format("baseline {:.2f} ms", b.tpot_p95_ms));
    }
    check("error_rate", c.error_rate(), l.error_rate,
          fmt::format("baseline {:.4f}", b.error_rate()));
    check("rate_429", c.rejected_rate(), l.rate_429,
          fmt::format("baseline {:.4f}", b.rejected_rate()));
  }
  // Structured output: of each arm's requests in the window that asked for
  // it (the mix of requests differs from the other metrics').
  if (b.so_n >= t.min_samples && c.so_n >= t.min_samples) {
    check("structured_failure_rate", c.so_failure_rate(), l.structured_failure_rate,
          fmt::format("baseline {:.4f} over {} requests", b.so_failure_rate(), b.so_n));
  }
  if (!breach && judged_ >= t.min_judged) {
    // The upper bound is what is compared: a breach says the candidate's
    // score is below the limit with 95% confidence.
    const WinRate w = WilsonInterval(judge_sum_, judged_);
    if (w.upper < t.min_judge_score) {
      breach = RolloutDecision{};
      breach->metric = "judge_score_upper95";
      breach->value = w.upper;
      breach->limit = t.min_judge_score;
      breach->detail = fmt::format("mean {:.3f} over {} pairs, 95% interval [{:.3f}, {:.3f}]",
                                   w.mean, w.n, w.lower, w.upper);
    }
  }
  return breach;
}

std::optional<RolloutDecision> Rollout::Tick(RolloutClock::time_point now) {
  if (finished() || stage_ == RolloutStage::kPromoted) return std::nullopt;
  if (auto breach = CheckThresholds(now)) {
    RolloutDecision d = MoveTo(RolloutStage::kRolledBack, -1, "rollback", "auto", now);
    d.metric = breach->metric;
    d.value = breach->value;
    d.limit = breach->limit;
    d.detail = breach->detail;
    return d;
  }
  const double in_stage = std::chrono::duration<double>(now - stage_since_).count();
  if (in_stage < StageSeconds()) return std::nullopt;
  if (stage_ == RolloutStage::kShadow) {
    if (stage_pairs_ < spec_.shadow_min_pairs) return std::nullopt;
    return MoveTo(RolloutStage::kCanary, 0, "advance", "auto", now);
  }
  if (step_ + 1 < static_cast<int>(spec_.canary.size())) {
    return MoveTo(RolloutStage::kCanary, step_ + 1, "advance", "auto", now);
  }
  if (!spec_.auto_promote) return std::nullopt;
  return MoveTo(RolloutStage::kPromoted, -1, "promote", "auto", now);
}

Expected<RolloutDecision> Rollout::Promote(const std::string& who, RolloutClock::time_point now) {
  if (finished() || stage_ == RolloutStage::kPromoted) {
    return InvalidArgument("rollout {} is {}: nothing to promote", id_, StageName(stage_));
  }
  if (stage_ == RolloutStage::kShadow) return MoveTo(RolloutStage::kCanary, 0, "promote", who, now);
  if (step_ + 1 < static_cast<int>(spec_.canary.size())) {
    return MoveTo(RolloutStage::kCanary, step_ + 1, "promote", who, now);
  }
  return MoveTo(RolloutStage::kPromoted, -1, "promote", who, now);
}

Expected<RolloutDecision> Rollout::Abort(const std::string& who, RolloutClock::time_point now) {
  if (finished()) return InvalidArgument("rollout {} is already {}", id_, StageName(stage_));
  return MoveTo(RolloutStage::kAborted, -1, "abort", who, now);
}

Json Rollout::StatusJson(RolloutClock::time_point now) {
  baseline_.Trim(now, spec_.thresholds.window_s);
  candidate_.Trim(now, spec_.thresholds.window_s);
  const WinRate w = WilsonInterval(judge_sum_, judged_);
  Json j = {{"id", id_},
            {"tier", spec_.tier},
            {"stage", StageName(stage_)},
            {"started_by", started_by_},
            {"candidate_share", CandidateShare()},
            {"shadow_share", ShadowShare()},
            {"seconds_in_stage", std::chrono::duration<double>(now - stage_since_).count()},
            {"seconds_since_start", std::chrono::duration<double>(now - started_at_).count()},
            {"baseline", baseline_.Stats().ToJson()},
            {"candidate", candidate_.Stats().ToJson()},
            // The candidate's limits now (from the baseline's window), and the
            // samples each arm needs before they are checked.
            {"limits", LimitsFor(baseline_.Stats(), spec_.thresholds).ToJson()},
            {"min_samples", spec_.thresholds.min_samples},
            {"judge",
             {{"pairs", judged_},
              {"score_mean", w.mean},
              {"score_lower95", w.lower},
              {"score_upper95", w.upper},
              {"position_inconsistent", position_inconsistent_}}},
            {"spec", RolloutSpecJson(spec_)}};
  if (stage_ == RolloutStage::kCanary) j["step"] = step_;
  return j;
}

}  // namespace brisk::gateway
