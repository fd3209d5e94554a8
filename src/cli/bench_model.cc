// `brisk bench-model`: the engine's raw speed, measured the way llama-bench
// and llama-batched-bench measure llama.cpp, so the two can be set side by
// side: pp = one forward of P prompt tokens; tg = G single-token decode steps
// from an empty context; batched = B sequences of P prompt tokens, then G
// steps decoding all B at once (aggregate tokens/s).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/commands.h"
#include "engine/kv_block_pool.h"
#include "model/model.h"

namespace brisk {
namespace {

struct BenchFlags {
  std::string model;
  int threads = 2;
  int pp = 512;
  int tg = 128;
  int reps = 3;
  std::vector<int> parallel = {1, 4, 16, 32};
  int npp = 128;
  int ntg = 128;
  std::string json_out;
  std::string precision = "native";
  std::string kv_precision = "f16";
  int depth = 0;  // context tokens already in the KV cache before tg
};

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Bench {
  Model& model;
  KvCache kv;
  KvBlockPool pool;
  ThreadPool threads;
  std::mt19937 rng{1234};
  std::vector<float> logits;

  Bench(Model& m, KvType kv_type, int64_t blocks, int n_threads)
      : model(m), kv(m.kv_shape(16, kv_type), blocks), pool(blocks), threads(n_threads) {}

  int32_t RandomToken() { return static_cast<int32_t>(rng() % model.config().vocab); }

  // Prefill of n tokens into fresh sequences (n_seqs of them), then `gen`
  // decode steps over all. Returns {prefill seconds, decode seconds}.
  Expected<std::pair<double, double>> Run(int n_seqs, int n_prompt, int gen, int max_batch) {
    std::vector<std::vector<int32_t>> blocks(n_seqs);
    std::vector<std::vector<int32_t>> toks(n_seqs);
    const int total = n_prompt + gen;
    for (int s = 0; s < n_seqs; ++s) {
      if (!pool.Allocate((total + 15) / 16, &blocks[s]))
        return ResourceExhausted("KV pool too small for the benchmark");
      for (int i = 0; i < total; ++i) toks[s].push_back(RandomToken());
    }
    Batch batch;
    double t_pp = 0, t_tg = 0;
    // Prefill in batches of at most max_batch tokens.
    if (n_prompt > 0) {
      auto t0 = Clock::now();
      int s = 0, off = 0;
      while (s < n_seqs) {
        batch.Clear();
        int budget = max_batch;
        while (s < n_seqs && budget > 0) {
          int chunk = std::min(n_prompt - off, budget);
          bool last = off + chunk == n_prompt;
          batch.Add(std::span<const int32_t>(toks[s]).subspan(off, chunk), off, blocks[s],
                    last ? BatchSequence::Logits::kLast : BatchSequence::Logits::kNone);
          budget -= chunk;
          off += chunk;
          if (last) {
            ++s;
            off = 0;
          }
        }
        RETURN_IF_ERROR(model.Forward(batch, kv, threads, &logits));
      }
      t_pp = Seconds(t0, Clock::now());
    }
    auto t1 = Clock::now();
    for (int g = 0; g < gen; ++g) {
      batch.Clear();
      for (int s = 0; s < n_seqs; ++s)
        batch.Add(std::span<const int32_t>(toks[s]).subspan(n_prompt + g, 1), n_prompt + g,
                  blocks[s]);
      RETURN_IF_ERROR(model.Forward(batch, kv, threads, &logits));
    }
    t_tg = Seconds(t1, Clock::now());
    for (auto& b : blocks) pool.Release(b);
    return std::make_pair(t_pp, t_tg);
  }
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int RunBench(const BenchFlags& f) {
  auto precision = LoadPrecisionType(f.precision);
  if (!precision.ok()) {
    std::fprintf(stderr, "brisk: error: %s\n", precision.status().ToString().c_str());
    return 1;
  }
  auto kv_type = ParseKvPrecision(f.kv_precision);
  if (!kv_type.ok()) {
    std::fprintf(stderr, "brisk: error: %s\n", kv_type.status().ToString().c_str());
    return 1;
  }
  LoadOptions load;
  load.precision = *precision;
  auto model = Model::Load(f.model, load);
  if (!model.ok()) {
    std::fprintf(stderr, "brisk: error: %s\n", model.status().ToString().c_str());
    return 1;
  }
  int max_par = 1;
  for (int p : f.parallel) max_par = std::max(max_par, p);
  const int64_t blocks = std::max<int64_t>((std::max(f.pp, f.depth) + f.tg + 15) / 16 + 1,
                                           int64_t{max_par} * ((f.npp + f.ntg + 15) / 16) + 1);
  Bench b(**model, *kv_type, blocks, f.threads);
  nlohmann::json out;
  out["model"] = f.model;
  out["precision"] = f.precision;
  out["kv_precision"] = f.kv_precision;
  out["kv_bytes_per_token"] = b.kv.shape().BytesPerBlock() / b.kv.shape().block_size;
  out["threads"] = f.threads;
  out["kernels"] = ActiveKernelVariant();
  out["weight_bytes"] = (*model)->weight_bytes();
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "brisk: error: %s\n", s.ToString().c_str());
    return 1;
  };
  // Warm-up: touches every weight page and sizes the scratch buffers.
  if (auto w = b.Run(1, std::min(f.pp, 64), 4, 512); !w.ok()) return fail(w.status());

  std::vector<double> pp_tps, tg_tps, pp_attn;
  for (int r = 0; r < f.reps; ++r) {
    if (f.pp > 0) {
      const double attn0 = (*model)->attention_seconds();
      auto res = b.Run(1, f.pp, 0, f.pp);
      if (!res.ok()) return fail(res.status());
      pp_tps.push_back(f.pp / res->first);
      pp_attn.push_back(((*model)->attention_seconds() - attn0) / res->first);
    }
    if (f.tg > 0) {
      auto res = b.Run(1, f.depth, f.tg, 512);
      if (!res.ok()) return fail(res.status());
      tg_tps.push_back(f.tg / res->second);
    }
  }
  // attention_share: the part of the pp time spent in attention proper
  // (Model::attention_seconds), median over the repetitions.
  out["pp"] = {{"n_prompt", f.pp},
               {"tokens_per_s", Median(pp_tps)},
               {"runs", pp_tps},
               {"attention_share", Median(pp_attn)}};
  out["tg"] = {
      {"n_gen", f.tg}, {"depth", f.depth}, {"tokens_per_s", Median(tg_tps)}, {"runs", tg_tps}};
  std::printf("model=%s threads=%d kernels=%s\n", f.model.c_str(), f.threads,
              ActiveKernelVariant());
  std::printf("pp%-4d %10.1f tokens/s (attention %.0f%% of the time)\n", f.pp, Median(pp_tps),
              100 * Median(pp_attn));
  std::printf("tg%-4d %10.1f tokens/s%s\n", f.tg, Median(tg_tps),
              f.depth ? fmt::format(" (after {} context tokens)", f.depth).c_str() : "");
  nlohmann::json par = nlohmann::json::array();
  for (int p : f.parallel) {
    auto res = b.Run(p, f.npp, f.ntg, 512);
    if (!res.ok()) return fail(res.status());
    double s_pp = p * f.npp / res->first, s_tg = p * f.ntg / res->second;
    par.push_back({{"parallel", p},
                   {"npp", f.npp},
                   {"ntg", f.ntg},
                   {"pp_tokens_per_s", s_pp},
                   {"tg_tokens_per_s", s_tg}});
    std::printf("batched npl=%-3d pp %8.1f tokens/s  tg %8.1f tokens/s\n", p, s_pp, s_tg);
    std::fflush(stdout);
  }
  out["batched"] = par;
  if (!f.json_out.empty()) {
    FILE* fp = std::fopen(f.json_out.c_str(), "w");
    if (!fp) return fail(InvalidArgument("cannot write '{}'", f.json_out));
    std::string s = out.dump(2);
    std::fwrite(s.data(), 1, s.size(), fp);
    std::fclose(fp);
  }
  return 0;
}

}  // namespace

CommandRunner RegisterBenchModel(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  f->model = DefaultModelPath();
  app.add_option("-m,--model", f->model, "GGUF model file")->capture_default_str();
  app.add_option("-t,--threads", f->threads, "Threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("-p,--pp", f->pp, "Prompt tokens for pp")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  app.add_option("-n,--tg", f->tg, "Generated tokens for tg")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  app.add_option("-r,--reps", f->reps, "Repetitions (median reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--parallel", f->parallel, "Parallel sequences for batched decode")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--npp", f->npp, "Prompt tokens per sequence (batched)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--ntg", f->ntg, "Generated tokens per sequence (batched)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--json", f->json_out, "Write results as JSON to this file");
  app.add_option("--precision", f->precision,
                 "Weight precision at load (as brisk serve --precision): native, f32, f16, bf16, "
                 "q8_0, q4_0, int8, int4, fp8, ...");
  app.add_option("--kv-precision", f->kv_precision,
                 "KV cache precision (as brisk serve --kv-precision): f16, f32, bf16, int8, fp8")
      ->capture_default_str();
  app.add_option("-d,--depth", f->depth,
                 "Context tokens in the KV cache before tg is timed (as llama-bench -d)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  return [f] { return RunBench(*f); };
}

}  // namespace brisk
