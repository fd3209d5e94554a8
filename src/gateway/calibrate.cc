#include "gateway/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "gateway/json_fields.h"
#include "gateway/stream_rewriter.h"
#include "http/upstream_client.h"

namespace brisk::gateway {

using Json = nlohmann::json;

Expected<std::vector<CalibrationCase>> ReadCalibrationSet(const std::string& path,
                                                          const std::string& model) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open golden set '{}'", path);
  std::vector<CalibrationCase> cases;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object()) return InvalidArgument("{}:{}: not a JSON object", path, n);
    CalibrationCase c;
    c.id = j.contains("id") ? j["id"].dump() : std::to_string(n);
    Json body = {{"model", model}, {"temperature", 0}, {"max_tokens", IntOr(j, "max_tokens", 32)}};
    if (j.contains("messages") && j["messages"].is_array()) {
      body["messages"] = j["messages"];
      body["logprobs"] = true;
    } else if (j.contains("prompt") && j["prompt"].is_string()) {
      body["prompt"] = j["prompt"];
      body["logprobs"] = 0;
      c.chat = false;
    } else {
      return InvalidArgument("{}:{}: a case needs \"messages\" (array) or \"prompt\" (string)",
                             path, n);
    }
    c.body = body.dump();
    cases.push_back(std::move(c));
  }
  if (cases.empty()) return InvalidArgument("golden set '{}' has no cases", path);
  return cases;
}

double ThresholdForShare(std::vector<double> means, double share) {
  std::erase_if(means, [](double m) { return std::isnan(m); });
  if (means.empty()) return 0;
  std::sort(means.begin(), means.end());
  const size_t k = static_cast<size_t>(std::ceil(std::clamp(share, 0.0, 1.0) * means.size()));
  if (k == 0) return std::nextafter(means.front(), -std::numeric_limits<double>::infinity());
  // 0 would mean "off" in gateway.yaml: the largest threshold is just below it.
  if (k >= means.size()) return -1e-9;
  // Cases below means[k] escalate: exactly k when means[k-1] < means[k].
  return means[k];
}

Expected<CalibrationResult> Calibrate(const std::string& url, const std::string& api_key,
                                      const std::vector<CalibrationCase>& cases,
                                      double target_share) {
  boost::asio::io_context io;
  http::UpstreamOptions options;
  options.base_url = url;
  ASSIGN_OR_RETURN(auto client, http::UpstreamClient::Create(io.get_executor(), options));
  CalibrationResult result;
  for (const CalibrationCase& c : cases) {
    http::UpstreamRequest req;
    req.method = "POST";
    req.path = c.chat ? "/v1/chat/completions" : "/v1/completions";
    req.headers = {{"Content-Type", "application/json"}};
    if (!api_key.empty()) req.headers.push_back({"Authorization", "Bearer " + api_key});
    req.body = c.body;
    Expected<std::pair<int, std::string>> answer = FetchBlocking(*client, io, std::move(req));
    if (!answer.ok()) return answer.status().WithContext(fmt::format("case {}", c.id));
    if (answer->first != 200) {
      return InvalidArgument("case {}: HTTP {} from {}: {}", c.id, answer->first, url,
                             answer->second.substr(0, 300));
    }
    Json body = Json::parse(answer->second, nullptr, false);
    const AnswerFacts facts = body.is_object() ? ReadAnswer(body) : AnswerFacts{};
    if (facts.logprob_count == 0) {
      result.mean_logprobs.push_back(std::numeric_limits<double>::quiet_NaN());
      continue;
    }
    ++result.answered;
    result.mean_logprobs.push_back(facts.logprob_sum / static_cast<double>(facts.logprob_count));
  }
  if (result.answered == 0) {
    return InvalidArgument("{} answered no case with logprobs; a cascade cannot judge it", url);
  }
  result.threshold = ThresholdForShare(result.mean_logprobs, target_share);
  for (double m : result.mean_logprobs) result.escalated += !std::isnan(m) && m < result.threshold;
  return result;
}

}  // namespace brisk::gateway
