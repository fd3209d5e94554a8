// Running a golden set against an OpenAI-compatible server, the gate's
// thresholds, and the report (`brisk eval golden`).
//
// The gate file (YAML, next to the set by convention: set.gate.yaml):
//   min_pass_rate: 0.8               passed / cases
//   min_pass_rate_lower_bound: 0.7   one-sided 95% Wilson lower bound
//   max_latency_p95_ms: 2000         end-to-end, per case (sequential)
// and the distribution check of the served configuration against the model
// file's native one (native weights, F16 KV) on an evaluation text
// (src/eval/kld_gate.h):
//   max_kld: 0.05                    mean KL(native || served), nats
//   min_same_top1: 0.85              both pick the same most likely token
//   max_ln_ppl_ratio: 0.05           ln(PPL(served) / PPL(native))
//   kld_text: kld_text.txt           relative to the gate file; default: the
//                                    installed bench/golden/kld_text.txt
//   kld_ctx: 512                     tokens per chunk (second half scored)
//   kld_chunks: 6                    chunks of the text scored
// Every key is optional; an unknown key is an error. The report (JSON and
// a markdown table) lists every case with its verdict and says, per
// threshold, the value, the bound and whether it holds.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/golden_set.h"
#include "eval/kld_stats.h"
#include "util/status.h"

namespace brisk::eval {

struct CaseResult {
  std::string id;
  bool passed = false;
  std::string why;  // "" when passed
  std::string answer;
  std::string finish_reason;
  double latency_ms = 0;
};

struct GateThresholds {
  std::optional<double> min_pass_rate;
  std::optional<double> min_pass_rate_lower_bound;
  std::optional<double> max_latency_p95_ms;
  // The distribution check: runs only when one of these is set.
  std::optional<double> max_kld;
  std::optional<double> min_same_top1;
  std::optional<double> max_ln_ppl_ratio;
  std::string kld_text;  // as written in the file ("" = the installed text)
  int kld_ctx = 512;
  int kld_chunks = 6;
  bool names_kld() const { return max_kld || min_same_top1 || max_ln_ppl_ratio; }
};

Expected<GateThresholds> ParseGate(std::string_view yaml_text, std::string_view filename);

struct GateVerdict {
  std::string name;  // the threshold's key
  double value = 0, bound = 0;
  bool ok = false;
};

struct EvalReport {
  std::string set, url, model;
  std::vector<CaseResult> cases;
  int passed = 0;
  double pass_rate = 0, pass_rate_lower_bound = 0;
  double latency_p50_ms = 0, latency_p95_ms = 0;  // nearest rank
  std::vector<GateVerdict> gate;
  bool gate_passed = true;  // every threshold holds (true with none)
  // The distribution check: its summary and configuration (kld_gate.h's
  // KldCheckJson) when it ran; null when the gate names none of its
  // thresholds; {"checked": false, "why": ...} when it names them but the
  // server is not a converted brisk configuration (nothing to compare).
  nlohmann::json kld;
};

// Sends each case to `url` (one at a time, so latencies are the server's
// own) and checks its answer. An HTTP error or a transport failure fails
// the case (its status in `why`); it does not stop the run.
std::vector<CaseResult> RunGoldenSet(const std::string& url, const std::string& api_key,
                                     const std::string& model,
                                     const std::vector<GoldenCase>& cases);

EvalReport Summarize(std::vector<CaseResult> cases, const GateThresholds& gate);

// Adds the distribution check's verdicts (max_kld, min_same_top1,
// max_ln_ppl_ratio: those the gate names) to `r` and keeps `check` (its
// JSON) as r->kld; gate_passed then needs them too.
void ApplyKldGate(const GateThresholds& gate, const KldSummary& s, nlohmann::json check,
                  EvalReport* r);

nlohmann::json ReportJson(const EvalReport& r);
std::string ReportMarkdown(const EvalReport& r);

}  // namespace brisk::eval
