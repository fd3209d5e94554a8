// `brisk schema compile|check|bench`: a JSON Schema through the structured
// output grammar without a model run (only the model's tokenizer is read).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "cli/commands.h"
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
  auto trie = TokenTrie::Build(**tok);
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
  auto trie = TokenTrie::Build(**tok);
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
  return [f, compile, check, bench]() -> int {
    if (compile->parsed()) return RunCompile(*f);
    if (check->parsed()) return RunCheck(*f);
    if (bench->parsed()) return RunBench(*f);
    return 2;
  };
}

}  // namespace brisk
