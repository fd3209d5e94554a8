// MatMul speed on SmolLM2-135M shapes, per weight type, kernel variant and
// thread count. GEMV (1 token, decode) reports GB/s of weights streamed;
// GEMM (prefill) reports GFLOP/s. "packed" = PrepareMatMulWeight layout,
// "raw" = GGUF rows packed on the fly. Rates are per second of process CPU
// time (robust on a shared machine); Time/CPU columns give wall and CPU time.
//   kernels_bench --benchmark_filter='GEMV/Q4_1'
// Formats/ runs every quantized weight format on the same 2048 x 2048 shape.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tensor/format_traits.h"
#include "tensor/kernel_table.h"
#include "tensor/kernels.h"

namespace brisk {
namespace {

// Random normal weights through the format's reference quantizer (valid
// blocks, sane scales: no inf/nan slows anything down).
std::vector<uint8_t> RandomMatrix(DType t, int64_t rows, int64_t k) {
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 0.02f);
  const int64_t rb = RowBytes(t, k);
  std::vector<uint8_t> w(rows * rb);
  std::vector<float> row(k);
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = g(rng);
    QuantizeRow(t, row.data(), w.data() + r * rb, k);
  }
  return w;
}

ThreadPool& Pool(int n) {
  static std::unique_ptr<ThreadPool> pools[3];
  if (!pools[n]) pools[n] = std::make_unique<ThreadPool>(n);
  return *pools[n];
}

void RunMatMul(benchmark::State& state, const KernelTable* table, DType t, int64_t rows, int64_t k,
               int64_t n_tok, int threads, bool packed) {
  auto w = RandomMatrix(t, rows, k);
  std::vector<float> x(k * n_tok), y(rows * n_tok);
  std::mt19937 rng(1);
  std::normal_distribution<float> g;
  for (auto& v : x) v = g(rng);
  MatMulWeight mw;
  if (packed) {
    auto p = PrepareMatMulWeightFor(*table, t, w.data(), rows, k);
    if (!p.ok() || p->packed == nullptr) {
      state.SkipWithError("not repacked by this variant");
      return;
    }
    mw = *p;
  }
  ThreadPool& pool = Pool(threads);
  MatMulScratch scratch;
  for (auto _ : state) {
    if (packed) {
      MatMulWith(*table, mw, x.data(), k, n_tok, y.data(), rows, pool, scratch);
    } else {
      MatMulWith(*table, t, w.data(), rows, k, x.data(), k, n_tok, y.data(), rows, pool, scratch);
    }
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["GB/s"] =
      benchmark::Counter(it * rows * RowBytes(t, k) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(it * 2.0 * rows * k * n_tok / 1e9, benchmark::Counter::kIsRate);
}

// One decode step's matmuls over all 30 SmolLM2 layers (q, k, v, o, gate, up,
// down), so weights come from L3/DRAM as in real decode, not from L2.
void RunDecodeSweep(benchmark::State& state, const KernelTable* table, DType t, int threads,
                    int64_t n_tok) {
  struct M {
    int64_t rows, k;
  };
  const M layer[] = {{576, 576},  {192, 576},  {192, 576}, {576, 576},
                     {1536, 576}, {1536, 576}, {576, 1536}};
  std::vector<std::vector<uint8_t>> raw;
  std::vector<MatMulWeight> ws;
  int64_t bytes = 0;
  for (int l = 0; l < 30; ++l) {
    for (const M& m : layer) {
      raw.push_back(RandomMatrix(t, m.rows, m.k));
      auto p = PrepareMatMulWeightFor(*table, t, raw.back().data(), m.rows, m.k);
      ws.push_back(*p);
      bytes += m.rows * RowBytes(t, m.k);
    }
  }
  std::vector<float> x(1536 * n_tok, 0.5f), y(1536 * n_tok);
  ThreadPool& pool = Pool(threads);
  MatMulScratch scratch;
  for (auto _ : state) {
    for (const MatMulWeight& w : ws)
      MatMulWith(*table, w, x.data(), w.k, n_tok, y.data(), w.rows, pool, scratch);
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(it * bytes / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(
      it * 2.0 * bytes / RowBytes(t, 32) * 32 * n_tok / 1e9, benchmark::Counter::kIsRate);
}

// Every quantized weight format on one shape whose k suits them all (a
// multiple of 256): `copies` copies of a rows x k matrix, multiplied in turn,
// so with enough copies the weights stream from DRAM (16 copies of
// 2048 x 2048: 21 MiB in Q2_K .. 68 MiB in Q8_0) instead of a cache.
void RunFormatSweep(benchmark::State& state, const KernelTable* table, DType t, int64_t n_tok,
                    int copies) {
  const int64_t rows = 2048, k = 2048;
  const std::vector<uint8_t> one = RandomMatrix(t, rows, k);
  std::vector<std::vector<uint8_t>> raw(copies, one);
  std::vector<MatMulWeight> ws;
  for (const auto& w : raw) {
    auto p = PrepareMatMulWeightFor(*table, t, w.data(), rows, k);
    if (!p.ok()) {
      state.SkipWithError(p.status().ToString().c_str());
      return;
    }
    ws.push_back(*p);
  }
  std::vector<float> x(k * n_tok), y(rows * n_tok);
  std::mt19937 rng(1);
  std::normal_distribution<float> g;
  for (auto& v : x) v = g(rng);
  ThreadPool& pool = Pool(1);
  MatMulScratch scratch;
  for (auto _ : state) {
    for (const MatMulWeight& w : ws)
      MatMulWith(*table, w, x.data(), k, n_tok, y.data(), rows, pool, scratch);
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["GB/s"] =
      benchmark::Counter(it * copies * rows * RowBytes(t, k) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(it * copies * 2.0 * rows * k * n_tok / 1e9, benchmark::Counter::kIsRate);
}

struct ShapeDef {
  int64_t rows, k;
};

void RegisterAll() {
  const ShapeDef shapes[] = {{576, 576}, {192, 576}, {1536, 576}, {576, 1536}};
  const DType types[] = {DType::kQ4_1, DType::kQ4_0, DType::kQ8_0, DType::kF16};
  for (const KernelTable* table : AvailableKernelTables()) {
    const std::string v = KernelTableName(*table);
    if (v == "scalar") continue;
    // Formats/<type>/<cache|DRAM>/n<tokens>/<variant>: one thread, packed weights.
    for (const FormatTraits& f : AllFormats()) {
      if (f.kernel_slot < 0 || f.block_size == 1) continue;
      for (int copies : {1, 16}) {
        for (int64_t n_tok : {1, 4, 128}) {
          if (copies > 1 && n_tok > 4) continue;
          std::string name = std::string("Formats/") + f.name + (copies > 1 ? "/DRAM" : "/cache") +
                             "/n" + std::to_string(n_tok) + "/" + v;
          benchmark::RegisterBenchmark(name.c_str(), RunFormatSweep, table, f.type, n_tok, copies)
              ->Unit(benchmark::kMicrosecond)
              ->MeasureProcessCPUTime();
        }
      }
    }
    for (int threads : {1, 2}) {
      for (DType t : {DType::kQ4_1, DType::kQ4_0, DType::kQ8_0}) {
        for (int64_t n_tok : {1, 4}) {
          std::string name = std::string("DecodeSweep/") + DTypeName(t) + "/n" +
                             std::to_string(n_tok) + "/" + v + "/t" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), RunDecodeSweep, table, t, threads, n_tok)
              ->Unit(benchmark::kMillisecond)
              ->MeasureProcessCPUTime();
        }
      }
    }
    for (int threads : {1, 2}) {
      for (bool packed : {true, false}) {
        const std::string layout = packed ? "packed" : "raw";
        for (DType t : types) {
          for (int64_t n_tok : {1, 512}) {
            const std::string kind = n_tok == 1 ? "GEMV" : "GEMM";
            for (const auto& s : shapes) {
              std::string name = kind + "/" + DTypeName(t) + "/" + std::to_string(s.rows) + "x" +
                                 std::to_string(s.k) + "/" + v + "/" + layout + "/t" +
                                 std::to_string(threads);
              benchmark::RegisterBenchmark(name.c_str(), RunMatMul, table, t, s.rows, s.k, n_tok,
                                           threads, packed)
                  ->Unit(benchmark::kMicrosecond)
                  ->MeasureProcessCPUTime();
            }
          }
        }
        // Tied embedding / output head, decode only.
        std::string name =
            "GEMV/Q8_0/49152x576/" + v + "/" + layout + "/t" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), RunMatMul, table, DType::kQ8_0, 49152, 576, 1,
                                     threads, packed)
            ->Unit(benchmark::kMicrosecond)
            ->MeasureProcessCPUTime();
      }
    }
  }
}

}  // namespace
}  // namespace brisk

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  brisk::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
