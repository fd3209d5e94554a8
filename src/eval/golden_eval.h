// Running a golden set against an OpenAI-compatible server, the gate's
// thresholds, and the report (`brisk eval golden`).
//
// The gate file (YAML, next to the set by convention: set.gate.yaml):
//   min_pass_rate: 0.8               passed / cases
//   min_pass_rate_lower_bound: 0.7   one-sided 95% Wilson lower bound
//   max_latency_p95_ms: 2000         end-to-end, per case (sequential)
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
};

// Sends each case to `url` (one at a time, so latencies are the server's
// own) and checks its answer. An HTTP error or a transport failure fails
// the case (its status in `why`); it does not stop the run.
std::vector<CaseResult> RunGoldenSet(const std::string& url, const std::string& api_key,
                                     const std::string& model,
                                     const std::vector<GoldenCase>& cases);

EvalReport Summarize(std::vector<CaseResult> cases, const GateThresholds& gate);

nlohmann::json ReportJson(const EvalReport& r);
std::string ReportMarkdown(const EvalReport& r);

}  // namespace brisk::eval
