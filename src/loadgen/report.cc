#include "loadgen/report.h"

#include <cmath>
#include <fstream>

namespace brisk::loadgen {

namespace {

using json = nlohmann::json;

// Milliseconds to 1 us: enough for latencies, and keeps the file small.
double Ms(double seconds) { return std::round(seconds * 1e6) / 1e3; }
double Round3(double v) { return std::round(v * 1e3) / 1e3; }
// Seconds to 1 us.
double Sec(double seconds) { return std::round(seconds * 1e6) / 1e6; }

json DistributionJson(const Distribution& d) {
  return {{"count", d.count},     {"mean", Round3(d.mean)}, {"std", Round3(d.std)},
          {"min", Round3(d.min)}, {"p50", Round3(d.p50)},   {"p90", Round3(d.p90)},
          {"p95", Round3(d.p95)}, {"p99", Round3(d.p99)},   {"max", Round3(d.max)}};
}

json LengthJson(const LengthSpec& s) {
  return {{"len", s.len},
          {"spread", s.spread},
          {"dist", LengthDistName(s.dist)},
          {"max_len", s.max_len},
          {"min_len", s.min_len}};
}

json OptionalMs(const std::optional<double>& s) { return s ? json(Ms(*s)) : json(nullptr); }

}  // namespace

json ResultToJson(const BenchResult& r) {
  const BenchConfig& c = r.config;
  const BenchMetrics& m = r.metrics;
  json out;
  out["format"] = "brisk-bench-result/1";
  out["label"] = c.label;
  out["started_at"] = r.started_at;
  out["interrupted"] = r.interrupted;
  out["server"] = {{"url", c.client.url.ToString()},
                   {"endpoint", c.client.request.api == ApiKind::kChat ? "chat" : "completions"},
                   {"path", ApiPath(c.client.request.api)},
                   {"model", c.client.request.model}};
  const LoadSpec& l = c.load;
  json config = {{"num_requests", l.num_requests},
                 {"warmup", l.warmup},
                 {"mode", l.concurrency > 0 ? "closed-loop" : "open-loop"},
                 {"concurrency", l.concurrency},
                 {"max_inflight", l.max_inflight},
                 {"burstiness", l.burstiness},
                 {"seed", c.workload.seed},
                 {"ignore_eos", c.client.request.ignore_eos},
                 {"temperature", c.client.request.temperature},
                 {"timeout_s", c.client.timeout_s}};
  // JSON has no infinity: an unbounded rate is the string "inf".
  config["request_rate"] = std::isinf(l.request_rate) ? json("inf") : json(l.request_rate);
  config["slo_ms"] = {{"ttft", OptionalMs(c.slo.ttft_s)},
                      {"tpot", OptionalMs(c.slo.tpot_s)},
                      {"e2e", OptionalMs(c.slo.e2e_s)}};
  if (!c.client.request.extra_body.is_null()) config["extra_body"] = c.client.request.extra_body;
  out["config"] = std::move(config);
  const WorkloadSpec& w = c.workload;
  json workload = {{"name", WorkloadKindName(w.kind)},
                   {"source", r.workload_source},
                   {"input", LengthJson(w.input)},
                   {"output", LengthJson(w.output)}};
  if (w.kind == WorkloadKind::kSharedPrefix) {
    workload["prefix_len"] = w.prefix_len;
    workload["num_prefixes"] = w.num_prefixes;
  }
  if (w.kind == WorkloadKind::kConversation) workload["corpus_passages"] = r.corpus_passages;
  out["workload"] = std::move(workload);

  int64_t prompt_from_usage = 0, output_from_usage = 0;
  json requests = json::array();
  for (const RequestRecord& q : r.records) {
    json j = {{"index", q.index},
              {"status", RequestStatusName(q.status)},
              {"http_status", q.http_status},
              {"scheduled_s", Sec(q.scheduled_s)},
              {"start_s", Sec(q.start_s)},
              {"prompt_tokens", q.prompt_tokens},
              {"prompt_tokens_from_usage", q.prompt_tokens_from_usage},
              {"output_tokens", q.output_tokens},
              {"output_tokens_from_usage", q.output_tokens_from_usage},
              {"max_tokens", q.max_tokens},
              {"content_chunks", q.content_chunks},
              {"finish_reason", q.finish_reason}};
    if (q.status == RequestStatus::kOk) {
      j["ttft_ms"] = Ms(q.ttft_s);
      j["e2e_ms"] = Ms(q.e2e_s);
      j["tpot_ms"] = OptionalMs(Tpot(q));
      json itl = json::array();
      for (double gap : q.itl_s) itl.push_back(Ms(gap));
      j["itl_ms"] = std::move(itl);
      prompt_from_usage += q.prompt_tokens_from_usage;
      output_from_usage += q.output_tokens_from_usage;
    } else {
      j["error"] = q.error;
    }
    requests.push_back(std::move(j));
  }
  out["summary"] = {
      {"duration_s", Sec(m.duration_s)},
      {"completed", m.completed},
      {"errors", m.errors},
      {"rejected_429", m.rejected},
      {"cancelled", m.cancelled},
      {"warmup_failures", r.warmup_failures},
      {"total_input_tokens", m.total_input_tokens},
      {"total_output_tokens", m.total_output_tokens},
      {"prompt_tokens_from_usage", prompt_from_usage},
      {"output_tokens_from_usage", output_from_usage},
      {"request_throughput", Round3(m.request_throughput)},
      {"output_throughput", Round3(m.output_throughput)},
      {"total_token_throughput", Round3(m.total_token_throughput)},
      {"good_requests", m.has_slo ? json(m.good_requests) : json(nullptr)},
      {"goodput", m.has_slo ? json(Round3(m.goodput)) : json(nullptr)},
      {"ttft_ms", DistributionJson(m.ttft_ms)},
      {"tpot_ms", DistributionJson(m.tpot_ms)},
      {"itl_ms", DistributionJson(m.itl_ms)},
      {"e2e_ms", DistributionJson(m.e2e_ms)},
  };
  out["requests"] = std::move(requests);
  return out;
}

std::string FormatSummary(const BenchResult& r) {
  const BenchMetrics& m = r.metrics;
  std::string s;
  auto title = [&](std::string_view t) { s += fmt::format("{:-^50}\n", t); };
  auto row = [&](std::string_view name, const std::string& value) {
    s += fmt::format("{:<40} {:<10}\n", name, value);
  };
  auto num = [](double v, int digits) { return fmt::format("{:.{}f}", v, digits); };
  auto dist = [&](std::string_view what, const Distribution& d) {
    row(fmt::format("Mean {} (ms):", what), num(d.mean, 2));
    row(fmt::format("Median {} (ms):", what), num(d.p50, 2));
    row(fmt::format("P90 {} (ms):", what), num(d.p90, 2));
    row(fmt::format("P95 {} (ms):", what), num(d.p95, 2));
    row(fmt::format("P99 {} (ms):", what), num(d.p99, 2));
    row(fmt::format("Max {} (ms):", what), num(d.max, 2));
  };
  s += fmt::format("{:=^50}\n", " Serving Benchmark Result ");
  if (!r.config.label.empty()) row("Label:", r.config.label);
  row("Successful requests:", std::to_string(m.completed));
  row("Failed requests:", std::to_string(m.errors));
  row("Rejected requests (HTTP 429):", std::to_string(m.rejected));
  if (m.cancelled) row("Cancelled (interrupted):", std::to_string(m.cancelled));
  row("Benchmark duration (s):", num(m.duration_s, 2));
  row("Total input tokens:", std::to_string(m.total_input_tokens));
  row("Total generated tokens:", std::to_string(m.total_output_tokens));
  row("Request throughput (req/s):", num(m.request_throughput, 2));
  if (m.has_slo) row("Request goodput (req/s):", num(m.goodput, 2));
  row("Output token throughput (tok/s):", num(m.output_throughput, 2));
  row("Total token throughput (tok/s):", num(m.total_token_throughput, 2));
  title("Time to First Token");
  dist("TTFT", m.ttft_ms);
  title("Time per Output Token (excl. 1st token)");
  dist("TPOT", m.tpot_ms);
  title("Inter-token Latency");
  dist("ITL", m.itl_ms);
  title("End-to-end Latency");
  dist("E2EL", m.e2e_ms);
  s += std::string(50, '=') + "\n";
  return s;
}

Status WriteJsonFile(const std::string& path, const json& j) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return NotFound("cannot write {}", path);
  out << j.dump(1, ' ', false, json::error_handler_t::replace) << "\n";
  if (!out) return DataLoss("writing {} failed", path);
  return Status::Ok();
}

}  // namespace brisk::loadgen
