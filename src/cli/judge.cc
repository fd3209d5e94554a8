// `brisk judge --url URL --pairs FILE [--json OUT]`: measures the rollout
// judge (gateway/judge.h) on pairs whose better answer is known. Each line
// of FILE is {"id", "messages": [...] | "prompt": "..." | "request": {body},
// "baseline": text, "candidate": text, "better": "baseline" | "candidate"};
// the judge model is the server at URL. Prints the agreement with the known
// better answer (ties and failures counted apart), the position-bias rate
// (pairs whose two orders picked the same position) and n. Exit 0 when the
// pairs were run (whatever the agreement), 1 when the judge answered none,
// 2 on a bad file or no server.
#include "gateway/judge.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "gateway/calibrate.h"
#include "http/openai_answer.h"
#include "http/upstream_client.h"

namespace brisk {
namespace {

using Json = nlohmann::json;

struct JudgeFlags {
  std::string url = "http://127.0.0.1:8000";
  std::string pairs;
  std::string json_out;
  std::string model;  // "" = the first of GET /v1/models
  std::string api_key;
  int64_t seed = 1234;
};

struct KnownPair {
  std::string id;
  gateway::JudgePair pair;
  bool candidate_better = false;
};

// Exit 2: a bad pairs file or no judge server (see the top of this file).
int Fail(const Status& s) { return FailCommand("brisk judge", s, 2); }

Expected<std::vector<KnownPair>> ReadPairs(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open pairs file '{}'", path);
  std::vector<KnownPair> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object()) return InvalidArgument("{}:{}: not a JSON object", path, n);
    KnownPair p;
    p.id = j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>() : std::to_string(n);
    if (j.contains("request") && j["request"].is_object()) {
      p.pair.request = j["request"];
    } else if (j.contains("messages") && j["messages"].is_array()) {
      p.pair.request = {{"messages", j["messages"]}};
    } else if (j.contains("prompt") && j["prompt"].is_string()) {
      p.pair.request = {{"prompt", j["prompt"]}};
    } else {
      return InvalidArgument("{}:{}: a pair needs \"request\", \"messages\" or \"prompt\"", path,
                             n);
    }
    for (const char* key : {"baseline", "candidate", "better"}) {
      if (!j.contains(key) || !j[key].is_string())
        return InvalidArgument("{}:{}: \"{}\" must be a string", path, n, key);
    }
    p.pair.baseline = j["baseline"];
    p.pair.candidate = j["candidate"];
    const std::string better = j["better"];
    if (better != "baseline" && better != "candidate")
      return InvalidArgument("{}:{}: \"better\" must be \"baseline\" or \"candidate\"", path, n);
    p.candidate_better = better == "candidate";
    out.push_back(std::move(p));
  }
  if (out.empty()) return InvalidArgument("pairs file '{}' has no pairs", path);
  return out;
}

// Tallies of verdicts against the known better answer.
struct Tally {
  int64_t n = 0, agree = 0, disagree = 0, ties = 0, failed = 0;
  int64_t llm_ran = 0, position_inconsistent = 0;
  // Single orders, 2 per pair the LLM judged: right answers, and picks of A.
  int64_t orders = 0, order_right = 0, order_picked_a = 0;

  void Add(const gateway::JudgeVerdict& v, bool candidate_better) {
    ++n;
    if (!v.Decided()) {
      ++failed;
      return;
    }
    const double s = v.Score();
    if (s == 0.5) {
      ++ties;
    } else if ((s == 1) == candidate_better) {
      ++agree;
    } else {
      ++disagree;
    }
    if (!v.llm_ran) return;
    ++llm_ran;
    position_inconsistent += v.position_inconsistent;
    // Which position held the better answer in each order.
    const std::string right_first = candidate_better ? "B" : "A";
    const std::string right_second = candidate_better ? "A" : "B";
    orders += 2;
    order_right +=
        (v.winner_baseline_first == right_first) + (v.winner_candidate_first == right_second);
    order_picked_a += (v.winner_baseline_first == "A") + (v.winner_candidate_first == "A");
  }

  static double Rate(int64_t k, int64_t d) { return d ? static_cast<double>(k) / d : 0; }

  Json ToJson() const {
    return {{"n", n},
            {"agree", agree},
            {"disagree", disagree},
            {"ties", ties},
            {"failed", failed},
            {"agreement_rate", Rate(agree, n)},
            {"disagreement_rate", Rate(disagree, n)},
            {"tie_rate", Rate(ties, n)},
            {"llm_ran", llm_ran},
            {"position_inconsistent", position_inconsistent},
            {"position_bias_rate", Rate(position_inconsistent, llm_ran)},
            {"single_order_accuracy", Rate(order_right, orders)},
            {"single_order_picked_a", Rate(order_picked_a, orders)}};
  }
};

int RunJudge(const JudgeFlags& f) {
  auto pairs = ReadPairs(f.pairs);
  if (!pairs.ok()) return Fail(pairs.status());
  std::string model = f.model;
  if (model.empty()) {
    auto found = http::DiscoverModel(f.url, f.api_key);
    if (!found.ok()) return Fail(found.status());
    model = *found;
  }
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  http::UpstreamOptions options;
  options.base_url = f.url;
  auto client = http::UpstreamClient::Create(io.get_executor(), options);
  if (!client.ok()) return Fail(client.status());
  std::thread runner([&io] { io.run(); });
  gateway::JudgeOptions opts;
  opts.seed = f.seed;
  opts.api_key = f.api_key;
  gateway::Judge judge(client->get(), model, opts);

  Tally tally;
  Json results = Json::array();
  for (const KnownPair& p : *pairs) {
    std::promise<gateway::JudgeVerdict> promise;
    auto future = promise.get_future();
    judge.Score(p.pair, [&promise](gateway::JudgeVerdict v) { promise.set_value(std::move(v)); });
    const gateway::JudgeVerdict v = future.get();
    tally.Add(v, p.candidate_better);
    Json r = v.ToJson();
    r["id"] = p.id;
    r["better"] = p.candidate_better ? "candidate" : "baseline";
    results.push_back(std::move(r));
    if (!v.llm_error.empty())
      std::fprintf(stderr, "brisk judge: pair %s: %s\n", p.id.c_str(), v.llm_error.c_str());
  }
  guard.reset();
  io.stop();
  runner.join();
  client->reset();

  const Json summary = tally.ToJson();
  std::printf("judge model %s at %s, %zu pairs from %s (seed %lld)\n", model.c_str(), f.url.c_str(),
              pairs->size(), f.pairs.c_str(), static_cast<long long>(f.seed));
  std::printf("| n | agree | disagree | tie | failed | agreement | position bias |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  std::printf("| %lld | %lld | %lld | %lld | %lld | %.3f | %.3f |\n",
              static_cast<long long>(tally.n), static_cast<long long>(tally.agree),
              static_cast<long long>(tally.disagree), static_cast<long long>(tally.ties),
              static_cast<long long>(tally.failed), summary["agreement_rate"].get<double>(),
              summary["position_bias_rate"].get<double>());
  std::printf("single-order accuracy %.3f, single orders picking A %.3f\n",
              summary["single_order_accuracy"].get<double>(),
              summary["single_order_picked_a"].get<double>());
  if (!f.json_out.empty()) {
    Json out = summary;
    out["model"] = model;
    out["url"] = f.url;
    out["pairs_file"] = f.pairs;
    out["seed"] = f.seed;
    out["results"] = std::move(results);
    Status s = WriteTextFile(f.json_out, out.dump(2, ' ', false, Json::error_handler_t::replace));
    if (!s.ok()) return Fail(s);
  }
  return tally.failed == tally.n ? 1 : 0;
}

}  // namespace

CommandRunner RegisterJudge(CLI::App& app) {
  auto f = std::make_shared<JudgeFlags>();
  app.add_option("--url", f->url, "The judge model's server (default http://127.0.0.1:8000)");
  app.add_option("--pairs", f->pairs,
                 "Pairs with a known better answer (JSONL; format in src/cli/judge.cc)")
      ->required();
  app.add_option("--json", f->json_out, "Also write the summary and per-pair verdicts here");
  app.add_option("--model", f->model, "Model id to send (default: the server's first)");
  app.add_option("--api-key", f->api_key, "Bearer key for the server");
  app.add_option("--seed", f->seed, "The judge's sampling seed (default 1234)");
  return [f] { return RunJudge(*f); };
}

}  // namespace brisk
