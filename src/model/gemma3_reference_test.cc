// Gemma 3 270M (gemma3: sliding-window and global layers, q/k norms, GeGLU,
// post-norms, scaled embeddings, 262k vocabulary; Q5_0/Q4_K/Q6_K/Q8_0
// weights) against exact float64 math in numpy on the same GGUF
// (tools/make_exact_reference_gemma3.py; prompts are llama.cpp's reference
// tokenizations, so Brisk's tokenizer is not involved).
#include <gtest/gtest.h>

#include <filesystem>

#include "model/model.h"
#include "model/reference_test_util.h"
#include "util/test_support.h"

namespace brisk {
namespace {

const std::string kGemma = std::string(BRISK_MODEL_DIR) + "/gemma-3-270m-q4_k_m.gguf";

class Gemma3ReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kGemma)) BRISK_SKIP_OR_FAIL_MISSING("Gemma 3 270M not installed");
  }
  std::unique_ptr<Model> Load(bool f32) {
    LoadOptions o;
    o.dequantize_to_f32 = f32;
    auto m = Model::Load(kGemma, o);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(*m) : nullptr;
  }
};

TEST_F(Gemma3ReferenceTest, LoadsTheRecipe) {
  auto model = Load(/*f32=*/false);
  ASSERT_TRUE(model);
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.arch, "gemma3");
  EXPECT_EQ(c.n_layers, 18);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.vocab, 262144);
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_TRUE(c.qk_norm && c.post_norms);
  int global = 0;
  for (int l = 0; l < c.n_layers; ++l) global += !c.IsLocal(l);
  EXPECT_EQ(global, 3);  // layers 5, 11, 17
}

TEST_F(Gemma3ReferenceTest, ReferenceModeMatchesExactMath) {
  auto model = Load(/*f32=*/true);
  ASSERT_TRUE(model);
  auto a = Compare(*model, LoadFixture("gemma3_exact.json"), ExactLogProb);
  std::printf(
      "gemma3 f32 reference mode vs exact: positions=%lld top1=%.4f max|dlogprob|=%.4f "
      "mean=%.5f\n",
      (long long)a.positions, a.top1_rate(), a.max_dlogprob, a.mean());
  EXPECT_GE(a.positions, 300);
  EXPECT_GE(a.top1_rate(), 0.99);
  EXPECT_LT(a.mean(), 0.02);  // the F16 KV cache rounds
}

TEST_F(Gemma3ReferenceTest, FastPathStaysCloseToExactMath) {
  auto model = Load(/*f32=*/false);
  ASSERT_TRUE(model);
  auto a = Compare(*model, LoadFixture("gemma3_exact.json"), ExactLogProb);
  std::printf("gemma3 fast path vs exact: top1=%.4f max|dlogprob|=%.4f mean=%.4f\n", a.top1_rate(),
              a.max_dlogprob, a.mean());
  // 8-bit activation rounding flips near-ties (as in llama.cpp).
  EXPECT_GE(a.top1_rate(), 0.9);
  EXPECT_LT(a.mean(), 0.2);
}

// Greedy continuations in f32 reference mode against llama.cpp's on the same
// weights dequantized to F32 (tools/make_gemma3_llamacpp_fixture.py).
TEST_F(Gemma3ReferenceTest, GreedyContinuationsMatchLlamaCppOnF32Weights) {
  auto model = Load(/*f32=*/true);
  ASSERT_TRUE(model);
  const auto fixture = LoadFixture("gemma3_llamacpp_f32.json");
  const std::vector<int32_t> end = {1, 106};  // <eos>, <end_of_turn>
  int identical = 0, total = 0;
  double prefix = 0;
  for (const auto& p : fixture["prompts"]) {
    const auto prompt = p["tokens"].get<std::vector<int32_t>>();
    auto ref = p["greedy"]["tokens"].get<std::vector<int32_t>>();
    if (ref.size() > 16) ref.resize(16);  // the first 16 tokens keep the test short
    auto ours = GreedyTokens(*model, prompt, ref.size() + 1, end);
    // llama-server leaves the end token out of its list.
    if (ours.size() > ref.size()) ours.resize(ref.size());
    size_t common = 0;
    while (common < ours.size() && common < ref.size() && ours[common] == ref[common]) ++common;
    prefix += ref.empty() ? 1.0 : double(common) / double(ref.size());
    identical += ours == ref;
    ++total;
  }
  std::printf(
      "gemma3 greedy continuations identical to llama.cpp (f32 weights): %d/%d, "
      "mean common prefix %.1f%%\n",
      identical, total, 100 * prefix / total);
  EXPECT_GE(total, 20);
  EXPECT_GE(double(identical) / total, 0.9);
}

}  // namespace
}  // namespace brisk
