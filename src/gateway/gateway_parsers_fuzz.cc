// libFuzzer target (BRISK_FUZZ=ON): the gateway's parsers of outside input.
// Any bytes, as (1) gateway.yaml, (2) an upstream's SSE stream fed in two
// pieces, (3) an upstream's whole JSON answer, (4) a /v1/cost query string,
// (5) a client's JSON Schema and an answer checked against it (the cascade's
// AnswerCheck, valijson inside), (6) an /admin/rollouts start body (the
// rollout spec), must give a value or a clean error, never a crash; what comes
// out must keep its invariants (a parsed config names real tiers; rewritten
// SSE events are JSON or [DONE]; costs are finite and not negative; a schema
// is either checked or says why not; a rollout spec is in range and parses
// again from its own JSON).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "gateway/cost_report.h"
#include "gateway/gateway_config.h"
#include "gateway/rollout.h"
#include "gateway/stream_rewriter.h"
#include "grammar/answer_check.h"

namespace {

using namespace brisk::gateway;
using Json = nlohmann::json;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckShare(double share) { Check(std::isfinite(share) && share >= 0 && share <= 1); }

void CheckRolloutSpec(const RolloutSpec& s) {
  Check(!s.tier.empty() && !s.upstreams.empty() && !s.canary.empty());
  for (const UpstreamConfig& u : s.upstreams) {
    Check(u.url.starts_with("http://") && (u.type == "brisk" || u.type == "openai"));
  }
  CheckShare(s.shadow_share);
  double prev = 0;
  for (const CanaryStep& c : s.canary) {
    CheckShare(c.share);
    Check(c.share > prev);
    prev = c.share;
  }
  Check(s.gate_report.is_object());
}

void CheckEvents(const std::string& sse) {
  size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    size_t end = sse.find("\n\n", pos);
    Check(end != std::string::npos);
    pos = end;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0: {
      auto c = ParseGatewayConfig(input, "fuzz.yaml");
      if (c.ok()) {
        Check(!c->tiers.empty());
        for (const TierConfig& t : c->tiers) Check(!t.upstreams.empty());
        for (const auto& [feature, route] : c->routing.features) {
          Check(route == "cascade" || FindTier(*c, route) >= 0);
        }
      }
      break;
    }
    case 1: {
      ClientWants wants;
      wants.include_usage = size % 2;
      wants.logprobs = size % 3 == 0;
      // Chat/completions chunks, or (one input in five) Responses API events.
      auto rw = size % 5 == 0 ? std::make_unique<StreamRewriter>(ResponsePatch{true, "resp_0"})
                              : std::make_unique<StreamRewriter>(wants);
      std::string out;
      const size_t half = input.size() / 2;
      rw->Feed(input.substr(0, half), &out);
      rw->Feed(input.substr(half), &out);
      out += rw->Finish(CostAnnotation{0.5, "t", 1});
      CheckEvents(out);
      if (const Json* r = rw->final_response()) Check(r->is_object() && r->contains("usage"));
      const double cost = CostUsd(Prices{1, 0.5, 2}, rw->facts().tokens);
      Check(std::isfinite(cost) && cost >= 0);
      break;
    }
    case 2: {
      Json body = Json::parse(input, nullptr, false);
      if (body.is_discarded()) break;
      AnswerFacts f = ReadAnswer(body);
      Check(f.text.size() <= (size_t{1} << 20));
      AnnotateAnswer(&body, CostAnnotation{0.1, "t", 0}, false);
      std::string sse =
          AnswerAsStream(body, data[0] & 4, ClientWants{true, false, false}, CostAnnotation{});
      CheckEvents(sse);
      break;
    }
    case 3: {
      auto q = ParseCostQuery(input);
      if (q.ok()) Check(q->from_unix_ms < q->to_unix_ms);
      break;
    }
    case 4: {  // a client's JSON Schema, a newline, an upstream's answer
      const size_t nl = input.find('\n');
      Json schema = Json::parse(input.substr(0, nl), nullptr, false);
      if (schema.is_discarded()) break;
      brisk::AnswerCheck c = brisk::AnswerCheck::FromRequest(
          {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", schema}}}}}});
      Check(c.active());
      Check(c.has_schema() == c.skipped().empty());
      const std::string_view answer = nl == std::string_view::npos ? "" : input.substr(nl + 1);
      const std::string verdict = c.Check(answer);
      Check(verdict.empty() || verdict == "invalid_json" || verdict == "too_deep" ||
            verdict == "schema_mismatch");
      break;
    }
    case 5: {  // POST /admin/rollouts, parsed as RolloutManager::HandleAdmin does
      Json body = Json::parse(input, nullptr, false);
      if (body.is_discarded()) break;
      auto spec = ParseRolloutSpec(body);
      if (!spec.ok()) break;
      CheckRolloutSpec(*spec);
      // The spec as the status API shows it (keys and report left out) is a
      // body the parser takes back, to the same spec.
      Json again = RolloutSpecJson(*spec);
      again["gate_report"] = spec->gate_report;
      auto back = ParseRolloutSpec(again);
      Check(back.ok());
      Check(back->tier == spec->tier && back->model == spec->model &&
            back->upstreams.size() == spec->upstreams.size() &&
            back->canary.size() == spec->canary.size() &&
            back->shadow_share == spec->shadow_share &&
            back->thresholds.min_judge_score == spec->thresholds.min_judge_score);
      break;
    }
  }
  return 0;
}
