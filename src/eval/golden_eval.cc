#include "eval/golden_eval.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cmath>

#include "config/config_yaml.h"
#include "http/openai_answer.h"
#include "http/upstream_client.h"
#include "util/wilson.h"

namespace brisk::eval {
namespace {

using Json = nlohmann::json;

double QuantileOf(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

}  // namespace

Expected<GateThresholds> ParseGate(std::string_view yaml_text, std::string_view filename) {
  GateThresholds g;
  config_yaml::Reader r(filename);
  auto number = [&r](std::optional<double>* dst, double lo, double hi) -> config_yaml::Handler {
    return [&r, dst, lo, hi](const YAML::Node& v, const config_yaml::Loc& at) -> Status {
      double x = 0;
      if (!v.IsScalar() || !config_yaml::ParseFiniteDouble(v.Scalar(), &x) || x < lo || x > hi)
        return r.Error(at.line, "{} must be a number from {} to {}", at.path, lo, hi);
      *dst = x;
      return Status::Ok();
    };
  };
  RETURN_IF_ERROR(config_yaml::WithYamlDocument(yaml_text, filename, [&](const YAML::Node& doc) {
    return r.ReadMap(doc, {"", 1},
                     {{"min_pass_rate", number(&g.min_pass_rate, 0, 1)},
                      {"min_pass_rate_lower_bound", number(&g.min_pass_rate_lower_bound, 0, 1)},
                      {"max_latency_p95_ms", number(&g.max_latency_p95_ms, 0, 1e9)},
                      {"max_kld", number(&g.max_kld, 0, 1e3)},
                      {"min_same_top1", number(&g.min_same_top1, 0, 1)},
                      {"max_ln_ppl_ratio", number(&g.max_ln_ppl_ratio, -1e3, 1e3)},
                      {"kld_text", r.String(&g.kld_text, /*allow_empty=*/false)},
                      {"kld_ctx", r.Int(&g.kld_ctx, 16, 1 << 20)},
                      {"kld_chunks", r.Int(&g.kld_chunks, 1, 1 << 20)}},
                     {});
  }));
  return g;
}

std::vector<CaseResult> RunGoldenSet(const std::string& url, const std::string& api_key,
                                     const std::string& model,
                                     const std::vector<GoldenCase>& cases) {
  std::vector<CaseResult> out;
  boost::asio::io_context io;
  http::UpstreamOptions options;
  options.base_url = url;
  auto client = http::UpstreamClient::Create(io.get_executor(), options);
  for (const GoldenCase& c : cases) {
    CaseResult res;
    res.id = c.id;
    if (!client.ok()) {
      res.why = client.status().ToString();
      out.push_back(std::move(res));
      continue;
    }
    Json body = c.body;
    body["model"] = model;
    http::UpstreamRequest req;
    req.method = "POST";
    req.path = c.chat ? "/v1/chat/completions" : "/v1/completions";
    req.headers = {{"Content-Type", "application/json"}};
    if (!api_key.empty()) req.headers.push_back({"Authorization", "Bearer " + api_key});
    req.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
    const auto t0 = std::chrono::steady_clock::now();
    Expected<std::pair<int, std::string>> answer =
        http::FetchBlocking(**client, io, std::move(req));
    res.latency_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!answer.ok()) {
      res.why = answer.status().ToString();
    } else if (answer->first != 200) {
      res.why = fmt::format("HTTP {}: {}", answer->first, answer->second.substr(0, 200));
    } else {
      Json j = Json::parse(answer->second, nullptr, false);
      const http::AnswerFacts facts = j.is_object() ? http::ReadAnswer(j) : http::AnswerFacts{};
      res.answer = facts.text;
      res.finish_reason = facts.finish_reason;
      res.why = CheckAnswer(c.check, facts.text);
      res.passed = res.why.empty();
    }
    out.push_back(std::move(res));
  }
  return out;
}

EvalReport Summarize(std::vector<CaseResult> cases, const GateThresholds& gate) {
  EvalReport r;
  std::vector<double> latencies;
  for (const CaseResult& c : cases) {
    r.passed += c.passed;
    latencies.push_back(c.latency_ms);
  }
  const int n = static_cast<int>(cases.size());
  r.pass_rate = n > 0 ? static_cast<double>(r.passed) / n : 0;
  // The pass rate the set shows with 95% confidence (0 for no cases).
  r.pass_rate_lower_bound = WilsonScoreInterval(r.passed, n, kWilsonZ95OneSided).lower;
  r.latency_p50_ms = QuantileOf(latencies, 0.5);
  r.latency_p95_ms = QuantileOf(latencies, 0.95);
  r.cases = std::move(cases);
  auto at_least = [&](const char* name, const std::optional<double>& bound, double value) {
    if (bound) r.gate.push_back({name, value, *bound, value >= *bound});
  };
  at_least("min_pass_rate", gate.min_pass_rate, r.pass_rate);
  at_least("min_pass_rate_lower_bound", gate.min_pass_rate_lower_bound, r.pass_rate_lower_bound);
  if (gate.max_latency_p95_ms) {
    r.gate.push_back({"max_latency_p95_ms", r.latency_p95_ms, *gate.max_latency_p95_ms,
                      r.latency_p95_ms <= *gate.max_latency_p95_ms});
  }
  for (const GateVerdict& v : r.gate) r.gate_passed = r.gate_passed && v.ok;
  return r;
}

void ApplyKldGate(const GateThresholds& gate, const KldSummary& s, Json check, EvalReport* r) {
  if (gate.max_kld)
    r->gate.push_back({"max_kld", s.kld.mean, *gate.max_kld, s.kld.mean <= *gate.max_kld});
  if (gate.min_same_top1) {
    r->gate.push_back({"min_same_top1", s.same_top1.mean, *gate.min_same_top1,
                       s.same_top1.mean >= *gate.min_same_top1});
  }
  if (gate.max_ln_ppl_ratio) {
    r->gate.push_back({"max_ln_ppl_ratio", s.ln_ppl_ratio.mean, *gate.max_ln_ppl_ratio,
                       s.ln_ppl_ratio.mean <= *gate.max_ln_ppl_ratio});
  }
  r->gate_passed = true;
  for (const GateVerdict& v : r->gate) r->gate_passed = r->gate_passed && v.ok;
  r->kld = std::move(check);
}

Json ReportJson(const EvalReport& r) {
  Json cases = Json::array();
  for (const CaseResult& c : r.cases) {
    cases.push_back({{"id", c.id},
                     {"passed", c.passed},
                     {"why", c.why},
                     {"answer", c.answer},
                     {"finish_reason", c.finish_reason},
                     {"latency_ms", c.latency_ms}});
  }
  Json gate = Json::array();
  for (const GateVerdict& v : r.gate)
    gate.push_back({{"threshold", v.name}, {"value", v.value}, {"bound", v.bound}, {"ok", v.ok}});
  Json out = {{"set", r.set},
              {"url", r.url},
              {"model", r.model},
              {"cases", r.cases.size()},
              {"passed", r.passed},
              {"pass_rate", r.pass_rate},
              {"pass_rate_lower_bound_95", r.pass_rate_lower_bound},
              {"latency_p50_ms", r.latency_p50_ms},
              {"latency_p95_ms", r.latency_p95_ms},
              {"gate", std::move(gate)},
              {"gate_passed", r.gate_passed},
              {"results", std::move(cases)}};
  if (!r.kld.is_null()) out["kld"] = r.kld;
  return out;
}

std::string ReportMarkdown(const EvalReport& r) {
  // A cell of a markdown table: one line, pipes escaped, at most 80 bytes.
  auto cell = [](std::string s) {
    for (char& ch : s) {
      if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
    }
    if (s.size() > 80) s = s.substr(0, 77) + "...";
    std::string out;
    for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return out;
  };
  std::string md = fmt::format("# Golden set `{}` on {} ({})\n\n", r.set, r.model, r.url);
  md += fmt::format(
      "Passed **{}/{}** ({:.1f}%); one-sided 95% Wilson lower bound **{:.1f}%**. Latency p50 "
      "{:.0f} ms, p95 {:.0f} ms.\n\n",
      r.passed, r.cases.size(), 100 * r.pass_rate, 100 * r.pass_rate_lower_bound, r.latency_p50_ms,
      r.latency_p95_ms);
  if (!r.gate.empty()) {
    md += "| threshold | value | bound | holds |\n|---|---|---|---|\n";
    for (const GateVerdict& v : r.gate)
      md += fmt::format("| {} | {:.4g} | {:.4g} | {} |\n", v.name, v.value, v.bound,
                        v.ok ? "yes" : "**no**");
    md += fmt::format("\nGate: **{}**\n\n", r.gate_passed ? "passed" : "failed");
  }
  if (r.kld.is_object()) {
    if (r.kld.value("checked", true)) {
      const Json tested = r.kld.value("tested", Json::object());
      auto mean = [&](const char* name) {
        return r.kld.value(name, Json::object()).value("mean", 0.0);
      };
      md += fmt::format(
          "Distribution check of `{}` at precision {}, KV {}, against its native precision with "
          "an F16 KV cache, on `{}` ({} positions): mean KLD {:.6f}, same top-1 {:.2f}%, "
          "ln(PPL ratio) {:.6f}.\n\n",
          tested.value("model", ""), tested.value("precision", ""),
          tested.value("kv_precision", ""), r.kld.value("text", ""), r.kld.value("positions", 0),
          mean("kld"), 100 * mean("same_top1"), mean("ln_ppl_ratio"));
    } else {
      md += fmt::format("Distribution check: not run ({}).\n\n", r.kld.value("why", ""));
    }
  }
  md += "| case | verdict | answer |\n|---|---|---|\n";
  for (const CaseResult& c : r.cases)
    md += fmt::format("| {} | {} | {} |\n", cell(c.id), c.passed ? "pass" : cell(c.why),
                      cell(c.answer));
  return md;
}

}  // namespace brisk::eval
