// The forward pass against independent references on the same GGUF:
//  - exact float64 math in numpy (tools/make_exact_reference.py),
//  - llama.cpp through llama-cpp-python (tools/make_reference_fixtures.py), and
//  - llama.cpp on the same weights dequantized to f32 (... --f32), which
//    Brisk's f32 reference mode must match at >= 99% of positions.
// Both are stored as compact fixtures (top-10 per position, logsumexp,
// greedy continuations). Logits are compared as log-probabilities (logit -
// logsumexp): a uniform shift of all logits does not change the model's
// distribution, and llama.cpp's logits carry such a shift.
//
// What the numbers mean: Brisk in reference mode (f32 weights and
// activations) reproduces exact math; Brisk's fast path rounds activations to
// 8 bits per 32 values, as llama.cpp does, and that rounding alone flips the
// top-1 token at a few percent of near-tie positions. llama.cpp's own
// agreement with exact math is stored in the fixture for comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/sampler.h"
#include "model/model.h"
#include "model/reference_test_util.h"
#include "util/test_support.h"

namespace brisk {
namespace {

const std::string kModel = std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";

class ReferenceLogitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kModel)) BRISK_SKIP_OR_FAIL_MISSING("default model not installed");
  }
  std::unique_ptr<Model> Load(bool f32) {
    LoadOptions o;
    o.dequantize_to_f32 = f32;
    auto m = Model::Load(kModel, o);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(*m) : nullptr;
  }
};

auto LlamaLogProb = [](const nlohmann::json& p, size_t i, size_t k) {
  return double(p["top_logits"][i][k]) - double(p["lse"][i]);
};

TEST_F(ReferenceLogitsTest, ReferenceModeMatchesExactMath) {
  auto model = Load(/*f32=*/true);
  auto a = Compare(*model, LoadFixture("smollm2_exact.json"), ExactLogProb);
  std::printf(
      "f32 reference mode vs exact: positions=%lld top1=%.4f max|dlogprob|=%.4f "
      "mean=%.5f\n",
      (long long)a.positions, a.top1_rate(), a.max_dlogprob, a.mean());
  EXPECT_GE(a.positions, 1000);
  EXPECT_GE(a.top1_rate(), 0.998);  // a near-tie may flip on summation order
  EXPECT_LT(a.max_dlogprob, 0.05);  // only the F16 KV cache rounds
}

TEST_F(ReferenceLogitsTest, FastPathStaysAsCloseToExactAsLlamaCpp) {
  auto model = Load(/*f32=*/false);
  const auto exact = LoadFixture("smollm2_exact.json");
  auto a = Compare(*model, exact, ExactLogProb);
  const double llama = exact["meta"]["llama_cpp_top1_agreement_with_exact"];
  std::printf("fast path vs exact: top1=%.4f (llama.cpp %.4f) max|dlogprob|=%.4f mean=%.4f\n",
              a.top1_rate(), llama, a.max_dlogprob, a.mean());
  EXPECT_GE(a.top1_rate(), llama - 0.005);
  EXPECT_LT(a.mean(), 0.15);
  EXPECT_LT(a.max_dlogprob, 2.5);
}

TEST_F(ReferenceLogitsTest, FastPathMatchesLlamaCpp) {
  auto model = Load(/*f32=*/false);
  auto a = Compare(*model, LoadFixture("smollm2_reference.json"), LlamaLogProb);
  std::printf("fast path vs llama.cpp: positions=%lld top1=%.4f max|dlogprob|=%.4f mean=%.4f\n",
              (long long)a.positions, a.top1_rate(), a.max_dlogprob, a.mean());
  EXPECT_GE(a.positions, 1000);
  EXPECT_GE(a.top1_rate(), 0.95);
  EXPECT_LT(a.mean(), 0.2);
  EXPECT_LT(a.max_dlogprob, 2.5);
}

// Greedy 32-token continuations of every fixture prompt, fed back one token
// at a time: how many are identical to the fixture's, and the mean fraction
// of the common prefix (a near-tie flip makes the rest diverge).
struct GreedyAgreement {
  int identical = 0, total = 0;
  double prefix_frac = 0;
};

GreedyAgreement CompareGreedy(Model& model, const nlohmann::json& fixture) {
  GreedyAgreement g;
  for (const auto& p : fixture["prompts"]) {
    const auto ref = p["greedy"]["tokens"].get<std::vector<int32_t>>();
    // <|endoftext|> and <|im_end|>: the fixture's end-of-generation rule.
    const auto ours =
        GreedyTokens(model, p["tokens"].get<std::vector<int32_t>>(), ref.size(), {0, 2});
    size_t common = 0;
    while (common < ours.size() && common < ref.size() && ours[common] == ref[common]) ++common;
    g.prefix_frac += double(common) / double(ref.size());
    ++g.total;
    g.identical += ours == ref;
  }
  return g;
}

TEST_F(ReferenceLogitsTest, GreedyContinuationsVsLlamaCpp) {
  auto model = Load(/*f32=*/false);
  const auto g = CompareGreedy(*model, LoadFixture("smollm2_reference.json"));
  std::printf("greedy continuations identical to llama.cpp: %d/%d, mean common prefix %.1f%%\n",
              g.identical, g.total, 100 * g.prefix_frac / g.total);
  EXPECT_GE(g.total, 20);
  // Regression guards, not targets: a near-tie flip (see the top of this file)
  // diverges the rest of a continuation, and which near-ties flip depends on
  // float summation order (compiler flags, kernel variant).
  EXPECT_GE(double(g.identical) / g.total, 0.2);
  EXPECT_GE(g.prefix_frac / g.total, 0.5);
}

// The model's math against llama.cpp without 8-bit activation rounding on
// either side: llama.cpp on the default model's weights dequantized to f32
// (exactly the values the Q4_1/Q8_0 file encodes; fixture made by
// tools/make_reference_fixtures.py --f32) vs Brisk's reference mode on the
// same GGUF. Both keep K/V in fp16.
TEST_F(ReferenceLogitsTest, ReferenceModeMatchesLlamaCppF32) {
  auto model = Load(/*f32=*/true);
  const auto fixture = LoadFixture("smollm2_reference_f32.json");
  auto a = Compare(*model, fixture, LlamaLogProb);
  std::printf(
      "f32 reference mode vs llama.cpp f32: positions=%lld top1=%.4f max|dlogprob|=%.4f "
      "mean=%.5f\n",
      (long long)a.positions, a.top1_rate(), a.max_dlogprob, a.mean());
  EXPECT_GE(a.positions, 1000);
  EXPECT_GE(a.top1_rate(), 0.99);
  EXPECT_LT(a.max_dlogprob, 0.05);
  const auto g = CompareGreedy(*model, fixture);
  std::printf(
      "f32 greedy continuations identical to llama.cpp f32: %d/%d, mean common prefix "
      "%.1f%%\n",
      g.identical, g.total, 100 * g.prefix_frac / g.total);
  EXPECT_GE(g.total, 20);
  EXPECT_GE(double(g.identical) / g.total, 0.9);
}

}  // namespace
}  // namespace brisk
