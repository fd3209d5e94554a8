// `brisk eval golden`: a golden set (JSONL) against an OpenAI-compatible
// server, each answer checked, the gate's thresholds applied; the markdown
// report on stdout, optionally JSON and markdown files. Exit 0 when the gate
// holds, 1 when it does not, 2 on an error (the set or gate file is bad).
// `brisk eval kld` is in eval_kld.cc.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "eval/golden_eval.h"
#include "gateway/calibrate.h"
#include "server/config_yaml.h"
#include "server/serving_gate.h"

namespace brisk {
namespace {

struct EvalFlags {
  std::string set;
  std::string url = "http://127.0.0.1:8000";
  std::string api_key;
  std::string model;  // "" = the first of GET /v1/models
  std::string gate;   // "" = <set>.gate.yaml next to the set, when it exists
  std::string json_out;
  std::string markdown_out;
  std::string save_gate;  // a directory: where a passing report is kept for `brisk serve`
};

int Fail(const Status& s) {
  std::fprintf(stderr, "brisk eval: %s\n", s.message().c_str());
  return 2;
}

// Keeps a passing report under the serving key the evaluated server reports
// (GET /v1/models: data[0].brisk.serving_key), so `brisk serve` with the
// same model file, precision and engine finds it. A run without thresholds
// is no gate and is not kept; a failing one is not kept either.
Status SaveGate(const EvalFlags& f, const eval::EvalReport& report) {
  if (report.gate.empty())
    return InvalidArgument(
        "--save-gate: the run has no gate thresholds (<set>.gate.yaml or --gate)");
  if (!report.gate_passed) {
    std::fprintf(stderr, "brisk eval: the gate failed; no report kept\n");
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(nlohmann::json info, gateway::ModelInfo(f.url, f.api_key));
  const nlohmann::json* key_json = nullptr;
  if (info.contains("brisk") && info["brisk"].is_object() && info["brisk"].contains("serving_key"))
    key_json = &info["brisk"]["serving_key"];
  if (key_json == nullptr)
    return InvalidArgument("--save-gate: {} reports no serving key (not a brisk serve?)", f.url);
  ASSIGN_OR_RETURN(ServingKey key, ServingKey::FromJson(*key_json));
  std::error_code ec;
  std::filesystem::create_directories(f.save_gate, ec);
  if (ec) return InvalidArgument("--save-gate: cannot create '{}': {}", f.save_gate, ec.message());
  nlohmann::json out = eval::ReportJson(report);
  out["serving_key"] = key.ToJson();
  const std::string path = (std::filesystem::path(f.save_gate) / (key.Id() + ".json")).string();
  RETURN_IF_ERROR(
      WriteTextFile(path, out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
  std::fprintf(stderr, "brisk eval: gate passed; report kept as %s\n", path.c_str());
  return Status::Ok();
}

int RunGolden(const EvalFlags& f) {
  auto text = config_yaml::ReadConfigFile(f.set);
  if (!text.ok()) return Fail(text.status());
  auto cases = eval::ParseGoldenSet(*text, f.set);
  if (!cases.ok()) return Fail(cases.status());
  std::string gate_path = f.gate;
  if (gate_path.empty()) {
    std::filesystem::path p(f.set);
    p.replace_extension(".gate.yaml");
    if (std::filesystem::exists(p)) gate_path = p.string();
  }
  eval::GateThresholds gate;
  if (!gate_path.empty()) {
    auto g_text = config_yaml::ReadConfigFile(gate_path);
    if (!g_text.ok()) return Fail(g_text.status());
    auto g = eval::ParseGate(*g_text, gate_path);
    if (!g.ok()) return Fail(g.status());
    gate = *g;
  }
  std::string model = f.model;
  if (model.empty()) {
    auto m = gateway::DiscoverModel(f.url, f.api_key);
    if (!m.ok()) return Fail(m.status());
    model = *m;
  }
  std::fprintf(stderr, "brisk eval: %zu cases from %s against %s (%s)%s\n", cases->size(),
               f.set.c_str(), f.url.c_str(), model.c_str(),
               gate_path.empty() ? "" : (", gate " + gate_path).c_str());
  eval::EvalReport report =
      eval::Summarize(eval::RunGoldenSet(f.url, f.api_key, model, *cases), gate);
  report.set = f.set;
  report.url = f.url;
  report.model = model;
  const std::string md = eval::ReportMarkdown(report);
  std::fputs(md.c_str(), stdout);
  if (!f.json_out.empty()) {
    Status s = WriteTextFile(
        f.json_out,
        eval::ReportJson(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    if (!s.ok()) return Fail(s);
  }
  if (!f.markdown_out.empty()) {
    if (Status s = WriteTextFile(f.markdown_out, md); !s.ok()) return Fail(s);
  }
  if (!f.save_gate.empty()) {
    if (Status s = SaveGate(f, report); !s.ok()) return Fail(s);
  }
  return report.gate_passed ? 0 : 1;
}

}  // namespace

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return InvalidArgument("cannot write '{}'", path);
  return Status::Ok();
}

CommandRunner RegisterEval(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  app.require_subcommand(1);
  CLI::App* golden =
      app.add_subcommand("golden", "Run a golden set (JSONL) against a server and apply its gate");
  golden->add_option("--set", f->set, "Golden set (JSONL; format in src/eval/golden_set.h)")
      ->required();
  golden->add_option("--url", f->url, "OpenAI-compatible server (default http://127.0.0.1:8000)");
  golden->add_option("--api-key", f->api_key, "Bearer key for the server");
  golden->add_option("--model", f->model, "Model id to send (default: the server's first)");
  golden->add_option("--gate", f->gate,
                     "Gate thresholds (YAML; default <set>.gate.yaml if present)");
  golden->add_option("--json", f->json_out, "Also write the report as JSON here");
  golden->add_option("--markdown", f->markdown_out, "Also write the markdown report here");
  golden->add_option("--save-gate", f->save_gate,
                     "When the gate passes, keep the report here under the server's serving key "
                     "(the directory brisk serve --gate-dir reads)");
  CommandRunner kld = RegisterEvalKld(app);
  return [f, golden, kld] { return golden->parsed() ? RunGolden(*f) : kld(); };
}

}  // namespace brisk
