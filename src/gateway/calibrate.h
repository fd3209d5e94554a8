// `brisk gateway calibrate`: fits routing.cascade.min_mean_logprob to a
// target share of escalations (RouteLLM's idea: send to the larger model only
// the requests the small one is least sure of).
//
// For each case of a golden set (JSONL: {"messages": [...]} or {"prompt":
// "..."}, optional "max_tokens"), the cascade's first tier answers greedily
// with logprobs; the answer's mean token logprob is its confidence. The
// threshold is the confidence below which `target_share` of the cases fall,
// so on traffic like the golden set that share escalates.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gateway/gateway_config.h"
#include "util/status.h"

namespace brisk::gateway {

struct CalibrationCase {
  std::string id;
  std::string body;  // the request body sent (JSON)
  bool chat = true;
};

struct CalibrationResult {
  std::vector<double> mean_logprobs;  // per case, in file order (NaN: no answer)
  double threshold = 0;               // min_mean_logprob to configure
  int escalated = 0;                  // cases below the threshold
  int answered = 0;
};

// Parses a golden-set JSONL file; bad lines are InvalidArgument "file:line: ...".
Expected<std::vector<CalibrationCase>> ReadCalibrationSet(const std::string& path,
                                                          const std::string& model);

// The threshold for a share: the smallest value t such that the cases with
// mean < t are ceil(share x n) of them (ties may add more). Pure, tested.
double ThresholdForShare(std::vector<double> means, double share);

// Sends every case to `url` (an upstream of the cascade's first tier) one at
// a time and computes the threshold.
Expected<CalibrationResult> Calibrate(const std::string& url, const std::string& api_key,
                                      const std::vector<CalibrationCase>& cases,
                                      double target_share);

}  // namespace brisk::gateway
