// `brisk eval golden`: a golden set (JSONL) against an OpenAI-compatible
// server, each answer checked, the gate's thresholds applied; the markdown
// report on stdout, optionally JSON and markdown files. When the gate file
// names a KLD threshold and the server is a brisk serve of a converted
// configuration, the distribution check of that configuration against the
// model file's native one runs here too (eval/kld_gate.h), from the same
// file (its hash must be the server's). Exit 0 when the gate holds, 1 when
// it does not, 2 on an error (the set or gate file is bad, the model file
// is not the server's). `brisk eval kld` is in eval_kld.cc.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/serving_gate.h"
#include "config/config_yaml.h"
#include "eval/golden_eval.h"
#include "eval/kld_gate.h"
#include "gateway/calibrate.h"
#include "http/openai_answer.h"

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
  std::string save_gate;   // a directory: where a passing report is kept for `brisk serve`
  std::string model_file;  // "" = DefaultModelPath(): the file the server loaded
  int kld_threads = 0;     // 0 = every core
};

int Fail(const Status& s) {
  std::fprintf(stderr, "brisk eval: %s\n", s.message().c_str());
  return 2;
}

// The "brisk" object of the server's first model (GET /v1/models): what
// brisk serve says about its precision, KV precision and serving key.
Expected<nlohmann::json> BriskInfo(const EvalFlags& f) {
  ASSIGN_OR_RETURN(nlohmann::json info, http::ModelInfo(f.url, f.api_key));
  if (!info.contains("brisk") || !info["brisk"].is_object())
    return InvalidArgument("{} reports no brisk serving information (not a brisk serve?)", f.url);
  return info["brisk"];
}

// The gate file's evaluation text: kld_text relative to the gate file, else
// the installed one.
std::string KldTextPath(const eval::GateThresholds& gate, const std::string& gate_path) {
  if (gate.kld_text.empty()) return DefaultKldTextPath();
  std::filesystem::path p(gate.kld_text);
  if (p.is_relative()) p = std::filesystem::path(gate_path).parent_path() / p;
  return p.string();
}

// The distribution check of the configuration the server reports (its
// serving key) against the same file's native one. Not run, and said so in
// the report, when the server has no key: a server of the file's native
// configuration is the reference itself, and another server's weights are
// not at hand (nor when the default model file is not the server's and no
// report is to be kept). An error when the file given (or, for
// --save-gate, the default one) is not the server's.
Status CheckDistribution(const EvalFlags& f, const Expected<nlohmann::json>& brisk,
                         const eval::GateThresholds& gate, const std::string& gate_path,
                         eval::EvalReport* report) {
  auto not_run = [&](const std::string& why) {
    report->kld = {{"checked", false}, {"why", why}};
    std::fprintf(stderr, "brisk eval: distribution check not run: %s\n", why.c_str());
    return Status::Ok();
  };
  if (!brisk.ok()) return not_run(brisk.status().message());
  const char* kReference =
      "the server runs the model file's native precision with an F16 KV cache, the check's "
      "reference itself";
  if (!brisk->contains("serving_key")) return not_run(kReference);
  ASSIGN_OR_RETURN(ServingKey key, ServingKey::FromJson((*brisk)["serving_key"]));
  // A native server started with --serving-key (a new model file's gate).
  if (key.precision == "native" && key.kv_precision == "f16" && key.rope == "file")
    return not_run(kReference);
  const std::string path = f.model_file.empty() ? DefaultModelPath() : f.model_file;
  auto file = GgufFile::Open(path);
  Status usable =
      file.ok() ? CheckKeyDescribesLocalRun(key, ModelFileHash((*file)->bytes())) : file.status();
  if (!usable.ok()) {
    const std::string why = fmt::format(
        "the distribution check needs the model file the server loaded: {} is not it ({}); give "
        "it with --model-file",
        path, usable.message());
    // Only a guessed file is excused, and only where no report is kept.
    if (f.model_file.empty() && f.save_gate.empty()) return not_run(why);
    return InvalidArgument("{}", why);
  }
  eval::KldCheckConfig c;
  c.precision = key.precision;
  c.kv_precision = key.kv_precision;
  c.rope = key.rope;
  c.text = KldTextPath(gate, gate_path);
  c.n_ctx = gate.kld_ctx;
  c.max_chunks = gate.kld_chunks;
  c.threads = f.kld_threads > 0
                  ? f.kld_threads
                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::fprintf(stderr,
               "brisk eval: distribution check of %s (precision %s, KV %s, RoPE scaling %s) "
               "against its native precision with an F16 KV cache on %s (%d chunks of %d tokens "
               "at most)\n",
               path.c_str(), c.precision.c_str(), c.kv_precision.c_str(), c.rope.c_str(),
               c.text.c_str(), c.max_chunks, c.n_ctx);
  const bool tty = isatty(STDERR_FILENO) == 1;
  auto summary = eval::CompareWithNative(
      std::shared_ptr<const GgufFile>(std::move(*file)), c, [tty](int done, int total) {
        std::fprintf(stderr, "%schunk %d/%d%s", tty ? "\r" : "", done, total,
                     tty && done < total ? "" : "\n");
        std::fflush(stderr);
      });
  if (!summary.ok()) return summary.status().WithContext("the distribution check");
  eval::ApplyKldGate(gate, *summary, eval::KldCheckJson(*summary, c, path), report);
  return Status::Ok();
}

// Keeps a passing report under the serving key the evaluated server reports
// (GET /v1/models: data[0].brisk.serving_key), so `brisk serve` with the
// same model file, precision and engine finds it. A run without thresholds
// is no gate and is not kept; a failing one is not kept either.
Status SaveGate(const EvalFlags& f, const Expected<nlohmann::json>& brisk,
                const eval::EvalReport& report) {
  if (report.gate.empty())
    return InvalidArgument(
        "--save-gate: the run has no gate thresholds (<set>.gate.yaml or --gate)");
  if (!report.gate_passed) {
    std::fprintf(stderr, "brisk eval: the gate failed; no report kept\n");
    return Status::Ok();
  }
  if (!brisk.ok()) return brisk.status().WithContext("--save-gate");
  if (!brisk->contains("serving_key"))
    return InvalidArgument("--save-gate: {} reports no serving key (not a brisk serve?)", f.url);
  ASSIGN_OR_RETURN(ServingKey key, ServingKey::FromJson((*brisk)["serving_key"]));
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
    auto m = http::DiscoverModel(f.url, f.api_key);
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
  Expected<nlohmann::json> brisk = InvalidArgument("not asked");
  if (gate.names_kld() || !f.save_gate.empty()) brisk = BriskInfo(f);
  if (gate.names_kld()) {
    if (Status s = CheckDistribution(f, brisk, gate, gate_path, &report); !s.ok()) return Fail(s);
  }
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
    if (Status s = SaveGate(f, brisk, report); !s.ok()) return Fail(s);
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
  golden->add_option("--model-file", f->model_file,
                     "The GGUF file the server loaded, for the gate's distribution check (default: "
                     "the embedded default model)");
  golden->add_option("--kld-threads", f->kld_threads,
                     "Threads for the distribution check (default: every core)");
  CommandRunner kld = RegisterEvalKld(app);
  return [f, golden, kld] { return golden->parsed() ? RunGolden(*f) : kld(); };
}

}  // namespace brisk
