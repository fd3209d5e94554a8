// `brisk schema compile|check|bench|suite`: a JSON Schema through the
// structured output grammar without a model run (only the model's tokenizer
// is read).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "cli/commands.h"
#include "engine/token_vocab.h"
#include "grammar/schema_compiler.h"
#include "grammar/token_mask.h"
#include "model/gguf.h"
#include "model/tokenizer.h"

namespace brisk {
namespace {

using Seconds = std::chrono::duration<double>;

struct SchemaFlags {
  std::string schema;
  std::string instance;
  std::string model;
  bool use_model = false;
  bool compact = false;
  int seed = 1;
  int runs = 5;
  std::string jsonl;      // suite: cases, one JSON object a line ("-": stdin)
  double timeout_s = 60;  // suite: per-schema budget for walking its tests
  bool lenient = false;   // suite: CompileOptions::strict_defaults off
};

int Fail(const Status& s) {
  std::fprintf(stderr, "brisk: error: %s\n", s.ToString().c_str());
  return 2;
}

Expected<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Expected<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  auto gguf = GgufFile::Open(path);
  if (!gguf.ok()) return gguf.status();
  return Tokenizer::FromGguf(**gguf);
}

Expected<CompiledSchema> Compile(const std::string& path, double* seconds) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  const auto t0 = std::chrono::steady_clock::now();
  auto c = CompileJsonSchemaText(*text);
  if (seconds) *seconds = Seconds(std::chrono::steady_clock::now() - t0).count();
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

int RunCompile(const SchemaFlags& f) {
  double best = 1e30;
  Expected<CompiledSchema> c = InvalidArgument("no run");
  for (int i = 0; i < std::max(1, f.runs); ++i) {
    double s = 0;
    c = Compile(f.schema, &s);
    if (!c.ok()) return Fail(c.status());
    best = std::min(best, s);
  }
  std::printf("compiled %s in %.3f ms (best of %d): %zu nodes\n", f.schema.c_str(), best * 1e3,
              std::max(1, f.runs), c->grammar.nodes.size());
  std::printf("unenforced keywords: %zu\n", c->unenforced.size());
  for (const auto& u : c->unenforced) std::printf("  %s\n", u.ToString().c_str());
  return 0;
}

// The instance text: as in the file without trailing whitespace, or with
// --compact re-serialized (no whitespace, key order kept).
Expected<std::string> InstanceText(const SchemaFlags& f) {
  auto text = ReadFile(f.instance);
  if (!text.ok()) return text.status();
  std::string s = *text;
  if (f.compact) {
    auto j = nlohmann::ordered_json::parse(s, nullptr, false);
    if (j.is_discarded()) return InvalidArgument("{} is not JSON", f.instance);
    return j.dump();
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

int RunCheck(const SchemaFlags& f) {
  auto c = Compile(f.schema, nullptr);
  if (!c.ok()) return Fail(c.status());
  auto inst = InstanceText(f);
  if (!inst.ok()) return Fail(inst.status());
  for (const auto& u : c->unenforced)
    std::fprintf(stderr, "note: not enforced: %s\n", u.ToString().c_str());
  GrammarMatcher m(&c->grammar);
  if (!f.use_model) {
    for (size_t i = 0; i < inst->size(); ++i) {
      if (!m.Advance(static_cast<uint8_t>((*inst)[i]))) {
        std::printf("rejected at byte %zu: '%s' <here> '%s'\n", i, inst->substr(0, i).c_str(),
                    inst->substr(i, 20).c_str());
        return 1;
      }
    }
    if (!m.CanEnd()) {
      std::printf("rejected: the text ends before the value is complete\n");
      return 1;
    }
    std::printf("accepted (%zu bytes)\n", inst->size());
    return 0;
  }
  auto tok = LoadTokenizer(f.model);
  if (!tok.ok()) return Fail(tok.status());
  auto trie = TokenTrie::Build(TokenVocabOf(**tok));
  TokenMasker masker(trie.get());
  const std::vector<int32_t> ids = (*tok)->Encode(*inst, false, false);
  TokenBitmask mask;
  for (size_t i = 0; i < ids.size(); ++i) {
    masker.Compute(m, &mask);
    const std::string piece = (*tok)->TokenToPiece(ids[i]);
    if (!MaskHas(mask, ids[i]) || !m.AdvanceBytes(piece)) {
      std::printf("rejected at token %zu (id %d, '%s')\n", i, ids[i], piece.c_str());
      return 1;
    }
  }
  masker.Compute(m, &mask);
  const auto eos = (*tok)->eos_id();
  if (!m.CanEnd() || (eos && !MaskHas(mask, *eos))) {
    std::printf("rejected: the end of generation is not allowed after the last token\n");
    return 1;
  }
  std::printf("accepted (%zu tokens)\n", ids.size());
  return 0;
}

// A value the grammar accepts, by a random byte walk that steers towards
// closing once it has run long enough.
std::string GenerateInstance(const JsonGrammar& g, int seed) {
  std::mt19937 rng(seed);
  GrammarMatcher m(&g);
  std::string out;
  const std::string closers = "\"}],0123456789truefalsn";
  for (int step = 0; step < 4000 && !m.CanEnd(); ++step) {
    std::vector<uint8_t> ok;
    for (int b = 0x20; b < 0x7F; ++b) {
      GrammarMatcher copy;
      copy.CopyFrom(m);
      if (copy.Advance(static_cast<uint8_t>(b))) ok.push_back(static_cast<uint8_t>(b));
    }
    if (ok.empty()) break;
    uint8_t pick = ok[rng() % ok.size()];
    const bool close = step > 120 || rng() % 4 == 0;
    if (close) {
      for (char c : closers) {
        if (std::find(ok.begin(), ok.end(), static_cast<uint8_t>(c)) != ok.end()) {
          pick = static_cast<uint8_t>(c);
          break;
        }
      }
    }
    m.Advance(pick);
    out.push_back(static_cast<char>(pick));
  }
  return out;
}

int RunBench(const SchemaFlags& f) {
  double compile_s = 0;
  auto c = Compile(f.schema, &compile_s);
  if (!c.ok()) return Fail(c.status());
  auto tok = LoadTokenizer(f.model);
  if (!tok.ok()) return Fail(tok.status());
  const auto t_trie = std::chrono::steady_clock::now();
  auto trie = TokenTrie::Build(TokenVocabOf(**tok));
  const double trie_s = Seconds(std::chrono::steady_clock::now() - t_trie).count();
  std::string inst;
  if (!f.instance.empty()) {
    auto text = InstanceText(f);
    if (!text.ok()) return Fail(text.status());
    inst = *text;
  } else {
    inst = GenerateInstance(c->grammar, f.seed);
  }
  TokenMasker masker(trie.get());
  GrammarMatcher m(&c->grammar);
  const std::vector<int32_t> ids = (*tok)->Encode(inst, false, false);
  std::vector<double> times;
  TokenBitmask mask;
  for (size_t i = 0; i <= ids.size(); ++i) {
    for (int r = 0; r < std::max(1, f.runs); ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      masker.Compute(m, &mask);
      times.push_back(Seconds(std::chrono::steady_clock::now() - t0).count());
    }
    if (std::getenv("BRISK_SCHEMA_BENCH_SLOW") && times.back() > 1e-3)
      std::fprintf(stderr, "slow state after %zu tokens ('%s'): %.1f us, %zu nodes visited\n", i,
                   (*tok)->Decode(std::span<const int32_t>(ids).first(i), false).c_str(),
                   times.back() * 1e6, masker.last_visited());
    if (i == ids.size()) break;
    if (!m.AdvanceBytes((*tok)->TokenToPiece(ids[i]))) {
      std::fprintf(stderr, "the instance is rejected at token %zu; timing the states before\n", i);
      break;
    }
  }
  std::printf("schema %s: compile %.3f ms, %zu unenforced keywords\n", f.schema.c_str(),
              compile_s * 1e3, c->unenforced.size());
  std::printf("vocabulary %d tokens, trie %zu nodes built in %.1f ms\n", (*tok)->vocab_size(),
              trie->num_nodes(), trie_s * 1e3);
  std::printf("instance %zu bytes, %zu tokens: %s\n", inst.size(), ids.size(),
              inst.size() > 200 ? (inst.substr(0, 200) + "...").c_str() : inst.c_str());
  std::printf(
      "mask time over %zu computations: p50 %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us\n",
      times.size(), Percentile(times, 0.5) * 1e6, Percentile(times, 0.9) * 1e6,
      Percentile(times, 0.99) * 1e6, Percentile(times, 1.0) * 1e6);
  return 0;
}

// One suite case: {"id", "schema", "tests": [{"text", "valid"}]}. Prints one
// JSON line: compile outcome and seconds, the unenforced keywords, per test
// whether the text was accepted token by token (every token in the mask and
// advancing the matcher, then the end allowed), and every mask time (us).
nlohmann::ordered_json RunSuiteCase(const nlohmann::ordered_json& c, const Tokenizer& tok,
                                    TokenMasker& masker, double timeout_s,
                                    const CompileOptions& options) {
  nlohmann::ordered_json out;
  out["id"] = c.contains("id") && c["id"].is_string() ? c["id"] : nlohmann::ordered_json("");
  const std::string schema_text = c.contains("schema") ? c["schema"].dump() : "null";
  const auto t0 = std::chrono::steady_clock::now();
  auto compiled = CompileJsonSchemaText(schema_text, options);
  out["compile_s"] = Seconds(std::chrono::steady_clock::now() - t0).count();
  if (!compiled.ok()) {
    out["compiled"] = false;
    out["error"] = compiled.status().ToString();
    return out;
  }
  out["compiled"] = true;
  auto& unenforced = out["unenforced"] = nlohmann::ordered_json::array();
  for (const auto& u : compiled->unenforced) unenforced.push_back(u.ToString());
  const auto deadline = std::chrono::steady_clock::now() + Seconds(timeout_s);
  auto& tests = out["tests"] = nlohmann::ordered_json::array();
  std::vector<double> times;
  TokenBitmask mask;
  const auto eos = tok.eos_id();
  bool timed_out = false;
  const auto& all_tests =
      c.contains("tests") && c["tests"].is_array() ? c["tests"] : nlohmann::ordered_json::array();
  for (const auto& t : all_tests) {
    if (timed_out) break;
    // A malformed test (not {"text": string, "valid": bool}) is skipped.
    if (!t.is_object() || !t.contains("text") || !t["text"].is_string()) continue;
    const std::string text = t["text"].get<std::string>();
    const std::vector<int32_t> ids = tok.Encode(text, false, false);
    GrammarMatcher m(&compiled->grammar);
    nlohmann::ordered_json r;
    r["valid"] = t.contains("valid") && t["valid"].is_boolean() && t["valid"].get<bool>();
    r["tokens"] = ids.size();
    int64_t rejected_at = -1;
    bool mask_disagrees = false;
    for (size_t i = 0; i <= ids.size(); ++i) {
      const auto m0 = std::chrono::steady_clock::now();
      masker.Compute(m, &mask);
      const auto m1 = std::chrono::steady_clock::now();
      times.push_back(Seconds(m1 - m0).count());
      if (m1 > deadline) {
        timed_out = true;
        break;
      }
      if (i == ids.size()) {
        // The end: EOS must be in the mask exactly when the value is complete.
        const bool end_ok = m.CanEnd();
        if (eos && MaskHas(mask, *eos) != end_ok) mask_disagrees = true;
        if (!end_ok) rejected_at = static_cast<int64_t>(i);
        break;
      }
      const bool in_mask = MaskHas(mask, ids[i]);
      const bool advanced = m.AdvanceBytes(tok.TokenToPiece(ids[i]));
      if (in_mask != advanced) mask_disagrees = true;
      if (!in_mask || !advanced) {
        rejected_at = static_cast<int64_t>(i);
        break;
      }
    }
    if (timed_out) break;
    r["accepted"] = rejected_at < 0;
    if (rejected_at >= 0) r["rejected_at"] = rejected_at;
    if (mask_disagrees) r["mask_disagrees"] = true;
    tests.push_back(std::move(r));
  }
  if (timed_out) out["timeout"] = true;
  auto& us = out["mask_us"] = nlohmann::ordered_json::array();
  for (double s : times) us.push_back(std::round(s * 1e7) / 10);  // 0.1 us resolution
  return out;
}

int RunSuite(const SchemaFlags& f) {
  auto tok = LoadTokenizer(f.model);
  if (!tok.ok()) return Fail(tok.status());
  const auto t_trie = std::chrono::steady_clock::now();
  auto trie = TokenTrie::Build(TokenVocabOf(**tok));
  nlohmann::ordered_json head;
  head["model"] = f.model;
  head["strict_defaults"] = !f.lenient;
  head["vocab"] = (*tok)->vocab_size();
  head["trie_nodes"] = trie->num_nodes();
  head["trie_build_s"] = Seconds(std::chrono::steady_clock::now() - t_trie).count();
  std::printf("%s\n", head.dump().c_str());
  std::fflush(stdout);
  std::ifstream file;
  if (f.jsonl != "-") {
    file.open(f.jsonl, std::ios::binary);
    if (!file) return Fail(NotFound("cannot read {}", f.jsonl));
  }
  std::istream& in = f.jsonl == "-" ? std::cin : file;
  TokenMasker masker(trie.get());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto c = nlohmann::ordered_json::parse(line, nullptr, false);
    nlohmann::ordered_json out;
    if (c.is_discarded() || !c.is_object()) {
      out["error"] = "case is not a JSON object";
    } else {
      CompileOptions options;
      options.strict_defaults = !f.lenient;
      out = RunSuiteCase(c, **tok, masker, f.timeout_s, options);
    }
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

CommandRunner RegisterSchema(CLI::App& app) {
  auto f = std::make_shared<SchemaFlags>();
  f->model = DefaultModelPath();
  app.require_subcommand(1);
  auto* compile = app.add_subcommand("compile", "Compile a JSON Schema; list what is not enforced");
  compile->add_option("schema", f->schema, "JSON Schema file")->required();
  compile->add_option("--runs", f->runs, "compile this many times, report the fastest");
  auto* check = app.add_subcommand(
      "check", "Is INSTANCE accepted by SCHEMA's grammar? exit 0 accepted, 1 rejected");
  check->add_option("schema", f->schema, "JSON Schema file")->required();
  check->add_option("instance", f->instance, "JSON text file (trailing whitespace dropped)")
      ->required();
  check->add_option("--model", f->model, "walk token by token with this GGUF's tokenizer")
      ->each([f](const std::string&) { f->use_model = true; });
  check->add_flag("--compact", f->compact, "re-serialize the instance compactly first");
  auto* bench = app.add_subcommand("bench", "Token mask time percentiles for a schema");
  bench->add_option("schema", f->schema, "JSON Schema file")->required();
  bench->add_option("--model", f->model, "GGUF whose vocabulary to mask (default model)");
  bench->add_option("--instance", f->instance, "walk this instance (default: a generated one)");
  bench->add_flag("--compact", f->compact, "re-serialize the instance compactly first");
  bench->add_option("--seed", f->seed, "seed of the generated instance");
  bench->add_option("--runs", f->runs, "mask computations per state (default 5)");
  auto* suite = app.add_subcommand(
      "suite", "Compile many schemas and walk their test instances (MaskBench-style JSON lines)");
  suite
      ->add_option("jsonl", f->jsonl,
                   "cases, a line each: {\"id\", \"schema\", \"tests\": [{\"text\", "
                   "\"valid\"}]} (- for stdin)")
      ->required();
  suite->add_option("--model", f->model, "GGUF whose vocabulary to mask (default model)");
  suite->add_option("--timeout", f->timeout_s, "seconds per schema for its tests (default 60)");
  suite->add_flag("--lenient", f->lenient,
                  "JSON Schema defaults: a missing additionalProperties / items allows more");
  return [f, compile, check, bench, suite]() -> int {
    if (suite->parsed()) return RunSuite(*f);
    if (compile->parsed()) return RunCompile(*f);
    if (check->parsed()) return RunCheck(*f);
    if (bench->parsed()) return RunBench(*f);
    return 2;
  };
}

}  // namespace brisk
