// `brisk bench-kv`: KV memory at long context through the engine, with and
// without sliding-window paging (engine/kv_block_pool.h). One request of
// --context random tokens is prefilled in chunks and then decodes --tg
// tokens; reported: the most pool pages in use between steps and within
// one (a prefill chunk holds its new blocks' local pages until its step
// ends), their bytes, the formula
// (global layers x context + local layers x window, in layer-blocks), the
// prefill and decode seconds of each mode.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/commands.h"
#include "engine/engine.h"

namespace brisk {
namespace {

struct KvFlags {
  std::string model;
  int threads = 2;
  int context = 16384;
  int tg = 32;
  int64_t kv_mib = 1024;
  std::string json_out;
};

struct KvRun {
  int64_t peak_pages = 0, high_water = 0, page_bytes = 0, pages_total = 0;
  int page_layers = 0;
  double prefill_s = 0, decode_s = 0;
  std::vector<int32_t> tokens;
};

Expected<KvRun> RunOnce(Model& model, const Tokenizer& tok, const KvFlags& f, bool paging) {
  EngineOptions o;
  o.n_threads = f.threads;
  o.window_paging = paging;
  o.kv_budget_bytes = f.kv_mib << 20;
  o.scheduler.prefix_cache = false;
  Engine e(model, tok, o);
  GenerationRequest r;
  std::mt19937 rng(42);
  for (int i = 0; i < f.context; ++i)
    r.prompt.push_back(static_cast<int32_t>(rng() % model.config().vocab));
  r.sampling.temperature = 0;
  r.max_tokens = f.tg;
  r.ignore_eos = true;
  RETURN_IF_ERROR(e.Add(std::move(r)).status());
  KvRun run;
  run.page_bytes = e.kv_cache().shape().BytesPerPage();
  run.page_layers = e.kv_cache().shape().page_layers ? e.kv_cache().shape().page_layers
                                                     : e.kv_cache().shape().n_layers;
  run.pages_total = e.block_pool().num_blocks();
  const auto t0 = std::chrono::steady_clock::now();
  auto t_first = t0;
  while (e.HasWork()) {
    std::vector<SequenceOutput> outs;
    RETURN_IF_ERROR(e.Step(&outs));
    run.peak_pages = std::max(run.peak_pages, e.block_pool().num_used());
    for (const auto& out : outs) {
      if (run.tokens.empty() && !out.new_tokens.empty()) t_first = std::chrono::steady_clock::now();
      run.tokens.insert(run.tokens.end(), out.new_tokens.begin(), out.new_tokens.end());
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  run.high_water = e.block_pool().high_water();
  run.prefill_s = std::chrono::duration<double>(t_first - t0).count();
  run.decode_s = std::chrono::duration<double>(t1 - t_first).count();
  return run;
}

int RunKv(const KvFlags& f) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  };
  auto model = Model::Load(f.model);
  if (!model.ok()) return fail(model.status());
  auto tok = Tokenizer::FromGguf((*model)->file());
  if (!tok.ok()) return fail(tok.status());
  const ModelConfig& c = (*model)->config();
  int n_global = 0;
  for (int l = 0; l < c.n_layers; ++l) n_global += !c.IsLocal(l);
  nlohmann::json out;
  out["model"] = f.model;
  out["context"] = f.context;
  out["layers"] = c.n_layers;
  out["global_layers"] = n_global;
  out["window"] = c.sliding_window;
  // The formula, in layer-blocks of 16 positions: the global layers hold
  // the whole context, the local ones the window before the next token.
  const int64_t blocks = (f.context + f.tg + 15) / 16;
  const int64_t window_blocks = std::min<int64_t>(blocks, c.sliding_window / 16);
  out["formula_layer_blocks"] = c.sliding_window > 0
                                    ? n_global * blocks + (c.n_layers - n_global) * window_blocks
                                    : int64_t{c.n_layers} * blocks;
  std::vector<int32_t> first;
  for (bool paging : {false, true}) {
    auto run = RunOnce(**model, **tok, f, paging);
    if (!run.ok()) return fail(run.status());
    const char* name = paging ? "paged" : "unpaged";
    out[name] = {{"peak_pages", run->peak_pages},
                 {"page_layers", run->page_layers},
                 {"peak_layer_blocks", run->peak_pages * run->page_layers},
                 {"peak_kv_mib", double(run->peak_pages * run->page_bytes) / (1 << 20)},
                 {"high_water_pages", run->high_water},
                 {"high_water_kv_mib", double(run->high_water * run->page_bytes) / (1 << 20)},
                 {"pages_total", run->pages_total},
                 {"prefill_s", run->prefill_s},
                 {"decode_s", run->decode_s}};
    std::printf(
        "%-8s between steps %5lld pages x %2d layers = %5lld layer-blocks, %6.1f MiB; "
        "within a step %5lld pages, %6.1f MiB; prefill %.2f s, decode %d tokens %.2f s\n",
        name, static_cast<long long>(run->peak_pages), run->page_layers,
        static_cast<long long>(run->peak_pages * run->page_layers),
        double(run->peak_pages * run->page_bytes) / (1 << 20),
        static_cast<long long>(run->high_water),
        double(run->high_water * run->page_bytes) / (1 << 20), run->prefill_s, f.tg, run->decode_s);
    std::fflush(stdout);
    if (!paging)
      first = run->tokens;
    else
      out["same_tokens"] = first == run->tokens;
  }
  std::printf("formula  %lld layer-blocks; greedy tokens identical: %s\n",
              static_cast<long long>(out["formula_layer_blocks"].get<int64_t>()),
              out["same_tokens"].get<bool>() ? "yes" : "NO");
  if (!f.json_out.empty()) {
    if (Status s = WriteTextFile(f.json_out, out.dump(2)); !s.ok()) return fail(s);
  }
  return out["same_tokens"].get<bool>() ? 0 : 1;
}

}  // namespace

CommandRunner RegisterBenchKv(CLI::App& app) {
  auto f = std::make_shared<KvFlags>();
  f->model = DefaultModelPath();
  app.add_option("-m,--model", f->model, "GGUF model file")->capture_default_str();
  app.add_option("-t,--threads", f->threads, "Threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("-c,--context", f->context, "Prompt tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("-n,--tg", f->tg, "Tokens decoded after the prompt")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--kv-mib", f->kv_mib, "KV cache budget (MiB)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--json", f->json_out, "Write results as JSON to this file");
  return [f] { return RunKv(*f); };
}

}  // namespace brisk
