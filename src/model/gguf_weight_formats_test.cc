// Real GGUF files' weight formats: every tensor of Gemma 3 270M Q4_K_M (F32,
// Q8_0, Q5_0, Q4_K, Q6_K) has a type the loader takes, each matrix prepares
// for MatMul at its real shape, and one matrix of each type multiplies as its
// dequantized weights do. (Loading the model as a whole needs the gemma3
// architecture.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "tensor/format_traits.h"
#include "tensor/kernels.h"
#include "util/test_support.h"

namespace brisk {
namespace {

const std::string kGemma = std::string(BRISK_MODEL_DIR) + "/gemma-3-270m-q4_k_m.gguf";

TEST(GgufWeightFormats, Gemma3Q4KMTensorsAllHaveSupportedTypes) {
  if (!std::filesystem::exists(kGemma)) BRISK_SKIP_OR_FAIL_MISSING(kGemma);
  auto file = GgufFile::Open(kGemma);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::map<std::string, int> by_type;
  std::map<DType, const GgufTensorInfo*> first_matrix;
  for (const GgufTensorInfo& t : (*file)->tensors()) {
    const auto type = static_cast<DType>(t.ggml_type);
    by_type[DTypeName(type)]++;
    if (t.dims.size() == 1) {  // norms
      EXPECT_EQ(type, DType::kF32) << t.name;
      continue;
    }
    ASSERT_EQ(t.dims.size(), 2u) << t.name;
    EXPECT_TRUE(IsMatMulWeightType(type)) << t.name << " is " << DTypeName(type);
    auto w = PrepareMatMulWeight(type, t.data, t.dims[1], t.dims[0]);
    EXPECT_TRUE(w.ok()) << t.name << ": " << w.status().ToString();
    if (!first_matrix.count(type)) first_matrix[type] = &t;
  }
  EXPECT_EQ(by_type["Q5_0"], 81);
  EXPECT_GT(by_type["Q4_K"], 0);
  EXPECT_GT(by_type["Q6_K"], 0);

  // One matrix per type: the active kernels vs f64 dot products of the
  // dequantized rows, within the activations' 8-bit rounding.
  ThreadPool pool(2);
  MatMulScratch scratch;
  std::mt19937 rng(7);
  std::normal_distribution<float> g;
  for (const auto& [type, t] : first_matrix) {
    SCOPED_TRACE(t->name);
    const int64_t k = t->dims[0], rows = std::min<int64_t>(t->dims[1], 512), n = 3;
    const int G = FormatOf(type).act_group;
    auto w = PrepareMatMulWeight(type, t->data, rows, k);
    ASSERT_TRUE(w.ok());
    std::vector<float> x(k * n), y(rows * n), wr(k);
    for (float& v : x) v = g(rng);
    MatMul(*w, x.data(), n, y.data(), pool, scratch);
    for (int64_t r = 0; r < rows; ++r) {
      DequantizeRow(type, t->data + r * RowBytes(type, k), wr.data(), k);
      for (int64_t tok = 0; tok < n; ++tok) {
        const float* xt = x.data() + tok * k;
        double ref = 0, mag = 0, qerr = 0;
        for (int64_t i = 0; i < k; ++i) {
          ref += double{wr[i]} * xt[i];
          mag += std::fabs(double{wr[i]} * xt[i]);
        }
        for (int64_t b = 0; G > 0 && b < k / G; ++b) {
          double amax = 0, wsum = 0;
          for (int i = 0; i < G; ++i) {
            amax = std::fmax(amax, std::fabs(xt[b * G + i]));
            wsum += std::fabs(wr[b * G + i]);
          }
          qerr += amax / 254.0 * wsum;
        }
        ASSERT_NEAR(y[tok * rows + r], ref, 1.01 * qerr + 2e-5 * mag + 1e-6)
            << "row " << r << " token " << tok;
      }
    }
  }
}

}  // namespace
}  // namespace brisk
