// `brisk bench`: load-test an OpenAI-compatible server (Brisk, llama.cpp's
// llama-server, vLLM) over streaming HTTP and report TTFT, TPOT, ITL, E2E,
// throughput and goodput with vLLM's definitions (src/loadgen/).
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "loadgen/report.h"
#include "loadgen/runner.h"

namespace brisk {
namespace {

using namespace loadgen;

struct BenchServeFlags {
  std::string url = "http://127.0.0.1:8000";
  std::string endpoint = "completions";
  std::string model;
  std::string api_key;
  int64_t num_requests = 100;
  int64_t warmup = 0;
  std::string request_rate = "inf";
  double burstiness = 1.0;
  int64_t concurrency = 0;
  int64_t max_inflight = 0;
  std::string workload = "random";
  int64_t input_len = 128;
  int64_t output_len = 128;
  double input_spread = 0;
  double output_spread = 0;
  int64_t input_min = 0, input_max = 0, output_min = 0, output_max = 0;
  std::string length_dist = "uniform";
  int64_t prefix_len = 256;
  int64_t num_prefixes = 4;
  std::string text = kDefaultTextDir;
  std::string prompts;
  uint64_t seed = 0;
  bool ignore_eos = false;
  double temperature = 0;
  std::string slo;
  double timeout_s = 300;
  std::string extra_body;
  std::string json_out;
  std::string label;
  bool quiet = false;
};

struct Given {  // which length flags were on the command line
  CLI::Option *input_len, *output_len, *input_spread, *output_spread, *length_dist;
};

Expected<double> ParseRate(const std::string& text) {
  if (text == "inf" || text == "Inf" || text == "infinity")
    return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v > 0))
    return InvalidArgument("bad --request-rate '{}': a number of requests/s > 0, or inf", text);
  return v;
}

Expected<BenchConfig> MakeConfig(const BenchServeFlags& f, const Given& given) {
  BenchConfig c;
  ASSIGN_OR_RETURN(c.client.url, http::ParseUrl(f.url));
  if (f.endpoint == "chat") {
    c.client.request.api = ApiKind::kChat;
  } else if (f.endpoint != "completions") {
    return InvalidArgument("bad --endpoint '{}': use completions or chat", f.endpoint);
  }
  c.client.api_key = f.api_key;
  if (!(f.timeout_s > 0)) return InvalidArgument("--timeout must be > 0");
  c.client.timeout_s = f.timeout_s;
  c.client.request.model = f.model;
  c.client.request.ignore_eos = f.ignore_eos;
  c.client.request.temperature = f.temperature;
  if (!f.extra_body.empty()) {
    c.client.request.extra_body = nlohmann::json::parse(f.extra_body, nullptr, false);
    if (!c.client.request.extra_body.is_object())
      return InvalidArgument("--extra-body must be a JSON object, got: {}", f.extra_body);
  }

  ASSIGN_OR_RETURN(WorkloadKind kind, ParseWorkloadKind(f.workload));
  c.workload = kind == WorkloadKind::kConversation ? ConversationDefaults() : WorkloadSpec{};
  c.workload.kind = kind;
  if (kind != WorkloadKind::kConversation) {
    c.workload.input = LengthSpec{f.input_len, f.input_spread, LengthDist::kUniform, 0};
    c.workload.output = LengthSpec{f.output_len, f.output_spread, LengthDist::kUniform, 0};
  }
  // Flags given on the command line override the workload's defaults.
  if (given.length_dist->count() > 0) {
    ASSIGN_OR_RETURN(LengthDist dist, ParseLengthDist(f.length_dist));
    c.workload.input.dist = c.workload.output.dist = dist;
  }
  if (given.input_len->count() > 0) c.workload.input.len = f.input_len;
  if (given.output_len->count() > 0) c.workload.output.len = f.output_len;
  if (given.input_spread->count() > 0) c.workload.input.spread = f.input_spread;
  if (given.output_spread->count() > 0) c.workload.output.spread = f.output_spread;
  if (f.input_min > 0) c.workload.input.min_len = f.input_min;
  if (f.input_max > 0) c.workload.input.max_len = f.input_max;
  if (f.output_min > 0) c.workload.output.min_len = f.output_min;
  if (f.output_max > 0) c.workload.output.max_len = f.output_max;
  c.workload.prefix_len = f.prefix_len;
  c.workload.num_prefixes = f.num_prefixes;
  c.workload.text_path = f.text;
  c.workload.prompts_path = f.prompts;
  c.workload.seed = f.seed;

  c.load.num_requests = f.num_requests;
  c.load.warmup = f.warmup;
  ASSIGN_OR_RETURN(c.load.request_rate, ParseRate(f.request_rate));
  c.load.burstiness = f.burstiness;
  c.load.concurrency = f.concurrency;
  c.load.max_inflight = f.max_inflight;
  if (!f.slo.empty()) {
    ASSIGN_OR_RETURN(c.slo, ParseSlo(f.slo));
  }
  c.label = f.label;
  c.progress = !f.quiet;
  return c;
}

// One socket per in-flight request: allow as many as the hard limit permits.
void RaiseFileLimit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int RunBenchServe(const BenchServeFlags& f, const Given& given) {
  RaiseFileLimit();
  auto config = MakeConfig(f, given);
  if (!config.ok()) {
    std::fprintf(stderr, "brisk bench: error: %s\n", config.status().ToString().c_str());
    return 2;
  }
  auto result = RunBench(std::move(*config));
  if (!result.ok()) {
    std::fprintf(stderr, "brisk bench: error: %s\n", result.status().ToString().c_str());
    return 1;
  }
  std::fputs(FormatSummary(*result).c_str(), stdout);
  std::fflush(stdout);
  if (!f.json_out.empty()) {
    Status st = WriteJsonFile(f.json_out, ResultToJson(*result));
    if (!st.ok()) {
      std::fprintf(stderr, "brisk bench: error: %s\n", st.ToString().c_str());
      return 1;
    }
    if (!f.quiet) std::fprintf(stderr, "wrote %s\n", f.json_out.c_str());
  }
  // Print the first distinct errors so a failing run says why.
  int shown = 0;
  std::string last;
  for (const RequestRecord& r : result->records) {
    if (r.status == RequestStatus::kOk || r.error.empty() || r.error == last) continue;
    last = r.error;
    std::fprintf(stderr, "request %lld: %s: %s\n", static_cast<long long>(r.index),
                 RequestStatusName(r.status), r.error.c_str());
    if (++shown == 3) break;
  }
  if (result->interrupted) return 130;
  return result->metrics.completed > 0 ? 0 : 1;
}

}  // namespace

CommandRunner RegisterBenchServe(CLI::App& app) {
  auto f = std::make_shared<BenchServeFlags>();
  auto given = std::make_shared<Given>();
  app.footer(
      "Open loop (default): --request-rate R [--burstiness K] [--max-inflight M].\n"
      "Closed loop: --concurrency C. Exit status: 0 if any request succeeded, 1 if none\n"
      "(or no server), 2 for bad flags, 130 if interrupted.");
  app.add_option("--url", f->url, "Server base URL (http://HOST:PORT[/v1])")->capture_default_str();
  app.add_option("--endpoint", f->endpoint, "API: completions (/v1/completions) or chat")
      ->check(CLI::IsMember({"completions", "chat"}))
      ->capture_default_str();
  app.add_option("--model", f->model, "Model name to send (default: first id of GET /v1/models)");
  app.add_option("--api-key", f->api_key, "Sent as Authorization: Bearer KEY");
  app.add_option("-n,--num-requests", f->num_requests, "Measured requests")->capture_default_str();
  app.add_option("--warmup", f->warmup, "Warm-up requests first, excluded from the results")
      ->capture_default_str();
  app.add_option("--request-rate", f->request_rate,
                 "Open-loop arrival rate in requests/s; inf sends all at once")
      ->capture_default_str();
  app.add_option("--burstiness", f->burstiness,
                 "Gamma shape of inter-arrival gaps: 1 = Poisson, <1 burstier, >1 smoother")
      ->capture_default_str();
  app.add_option("-c,--concurrency", f->concurrency,
                 "Closed loop: this many users, each sends when its last request ends")
      ->capture_default_str();
  app.add_option("--max-inflight", f->max_inflight,
                 "Open loop: cap on requests in flight (0 = none)")
      ->capture_default_str();
  app.add_option("--workload", f->workload, "random | shared-prefix | conversation | prompts")
      ->check(CLI::IsMember({"random", "shared-prefix", "conversation", "prompts"}))
      ->capture_default_str();
  given->input_len = app.add_option("--input-len", f->input_len,
                                    "Prompt tokens, ~1 per word (shared-prefix: after the prefix; "
                                    "conversation: median, default 100)")
                         ->capture_default_str();
  given->output_len = app.add_option("--output-len", f->output_len,
                                     "max_tokens per request (conversation: median, default 200)")
                          ->capture_default_str();
  given->input_spread =
      app.add_option(
             "--input-spread", f->input_spread,
             "uniform: range ratio in [0,1] (0 = fixed); lognormal: sigma (conversation: 1)")
          ->capture_default_str();
  given->output_spread =
      app.add_option("--output-spread", f->output_spread, "Same for the output length")
          ->capture_default_str();
  given->length_dist =
      app.add_option("--length-dist", f->length_dist,
                     "uniform | lognormal, for both lengths (conversation: lognormal)")
          ->check(CLI::IsMember({"uniform", "lognormal"}))
          ->capture_default_str();
  app.add_option("--input-min", f->input_min, "Clamp prompt lengths to at least this");
  app.add_option("--input-max", f->input_max, "Clamp prompt lengths to at most this");
  app.add_option("--output-min", f->output_min, "Clamp output lengths to at least this");
  app.add_option("--output-max", f->output_max, "Clamp output lengths to at most this");
  app.add_option("--prefix-len", f->prefix_len, "shared-prefix: system prompt words")
      ->capture_default_str();
  app.add_option("--num-prefixes", f->num_prefixes, "shared-prefix: distinct system prompts")
      ->capture_default_str();
  app.add_option("--prompts", f->prompts,
                 "prompts: a JSONL file, one {\"prompt\": ...} or {\"messages\": [...]} per line "
                 "(optional \"max_tokens\")");
  app.add_option("--text", f->text,
                 "conversation: fortune-format directory or text file (default: Debian package "
                 "'fortunes')")
      ->capture_default_str();
  app.add_option("--seed", f->seed, "Seed for prompts, lengths and arrival times")
      ->capture_default_str();
  app.add_flag("--ignore-eos", f->ignore_eos,
               "Ask the server to ignore EOS so every request makes max_tokens tokens");
  app.add_option("--temperature", f->temperature, "Sampling temperature")->capture_default_str();
  app.add_option("--slo", f->slo,
                 "Goodput objectives, e.g. ttft=650ms,tpot=50ms,e2e=5s (ms, s or us)");
  app.add_option("--timeout", f->timeout_s, "Per-request timeout in seconds")
      ->capture_default_str();
  app.add_option("--extra-body", f->extra_body,
                 "JSON object merged into every request body (server-specific options)");
  app.add_option("--json", f->json_out, "Write the JSON result here");
  app.add_option("--label", f->label, "Name for this run in the result and plots");
  app.add_flag("-q,--quiet", f->quiet, "No live progress line");
  return [f, given] { return RunBenchServe(*f, *given); };
}

}  // namespace brisk
