// Integration tests of the llama forward pass on the real default model.
#include "model/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "config/inference_config.h"
#include "engine/kv_block_pool.h"
#include "util/test_support.h"

namespace brisk {
namespace {

std::string ModelPath() {
  return std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

class ModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(ModelPath())) return;
    auto m = Model::Load(ModelPath());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    if (!model_) BRISK_SKIP_OR_FAIL_MISSING("default model not installed");
  }
  static Model* model_;
};
Model* ModelTest::model_ = nullptr;

std::vector<int32_t> RandomTokens(std::mt19937& rng, int n, int vocab) {
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % vocab);
  return t;
}

float MaxAbsDiff(const float* a, const float* b, int64_t n) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST_F(ModelTest, ConfigMatchesSmolLM2) {
  const auto& c = model_->config();
  EXPECT_EQ(c.n_layers, 30);
  EXPECT_EQ(c.d_model, 576);
  EXPECT_EQ(c.n_heads, 9);
  EXPECT_EQ(c.n_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.d_ff, 1536);
  EXPECT_EQ(c.vocab, 49152);
  EXPECT_TRUE(c.tied_output);
  EXPECT_FLOAT_EQ(c.rope_theta, 100000.f);
}

// A sequence gets the same logits alone as among 15 others of different
// lengths, and whether its prompt runs in one pass or in chunks.
TEST_F(ModelTest, BatchedForwardMatchesSingleSequence) {
  const int vocab = model_->config().vocab;
  const int kSeqs = 16;
  std::mt19937 rng(11);
  KvCache kv(model_->kv_shape(16), 256);
  KvBlockPool pool(256);
  ThreadPool threads(2);
  std::vector<std::vector<int32_t>> prompts(kSeqs), blocks(kSeqs);
  for (int s = 0; s < kSeqs; ++s) {
    prompts[s] = RandomTokens(rng, 1 + static_cast<int>(rng() % 40), vocab);
    ASSERT_TRUE(pool.Allocate((prompts[s].size() + 15) / 16, &blocks[s]));
  }
  // Alone: every position's logits.
  std::vector<std::vector<float>> alone(kSeqs);
  for (int s = 0; s < kSeqs; ++s) {
    Batch b;
    b.Add(prompts[s], 0, blocks[s], BatchSequence::Logits::kAll);
    ASSERT_TRUE(model_->Forward(b, kv, threads, &alone[s]).ok());
    ASSERT_EQ(alone[s].size(), prompts[s].size() * vocab);
  }
  // Together, in two steps: the first half of each prompt, then the rest.
  Batch first, second;
  for (int s = 0; s < kSeqs; ++s) {
    int32_t half = static_cast<int32_t>(prompts[s].size() / 2);
    if (half > 0)
      first.Add(std::span<const int32_t>(prompts[s]).first(half), 0, blocks[s],
                BatchSequence::Logits::kNone);
    second.Add(std::span<const int32_t>(prompts[s]).subspan(half), half, blocks[s],
               BatchSequence::Logits::kAll);
  }
  std::vector<float> unused, together;
  ASSERT_TRUE(model_->Forward(first, kv, threads, &unused).ok());
  ASSERT_TRUE(model_->Forward(second, kv, threads, &together).ok());
  int64_t row = 0;
  float worst = 0;
  for (int s = 0; s < kSeqs; ++s) {
    int32_t half = static_cast<int32_t>(prompts[s].size() / 2);
    for (size_t i = half; i < prompts[s].size(); ++i, ++row) {
      float d = MaxAbsDiff(&together[row * vocab], &alone[s][i * vocab], vocab);
      worst = std::max(worst, d);
    }
  }
  // Logits are O(10); batching changes only float summation order.
  EXPECT_LT(worst, 2e-2f) << "max |logit difference| between batched and single";
}

// What a prefix-cache hit computes: the prompt's full blocks were computed by
// an earlier request, the rest runs as one chunk over that cached K/V. Its
// logits equal those of the whole prompt computed in one pass.
TEST_F(ModelTest, PrefixCacheHitGivesTheSameLogits) {
  const int vocab = model_->config().vocab;
  std::mt19937 rng(5);
  ThreadPool threads(2);
  for (int prefix_blocks : {1, 2, 5}) {
    KvCache kv(model_->kv_shape(16), 64);
    KvBlockPool pool(64);
    const auto prompt =
        RandomTokens(rng, prefix_blocks * 16 + 1 + static_cast<int>(rng() % 20), vocab);
    std::vector<int32_t> a, b;
    ASSERT_TRUE(pool.Allocate((prompt.size() + 15) / 16, &a));
    ASSERT_TRUE(pool.Allocate((prompt.size() + 15) / 16, &b));
    Batch whole;
    whole.Add(prompt, 0, a, BatchSequence::Logits::kLast);
    std::vector<float> ref, unused, hit;
    ASSERT_TRUE(model_->Forward(whole, kv, threads, &ref).ok());
    const int32_t cached = prefix_blocks * 16;
    Batch earlier, suffix;
    earlier.Add(std::span<const int32_t>(prompt).first(cached), 0, b, BatchSequence::Logits::kNone);
    suffix.Add(std::span<const int32_t>(prompt).subspan(cached), cached, b,
               BatchSequence::Logits::kLast);
    ASSERT_TRUE(model_->Forward(earlier, kv, threads, &unused).ok());
    ASSERT_TRUE(model_->Forward(suffix, kv, threads, &hit).ok());
    const float d = MaxAbsDiff(ref.data(), hit.data(), vocab);
    RecordProperty("max_abs_logit_diff_" + std::to_string(prefix_blocks), std::to_string(d));
    std::printf("prefix %d blocks: max |logit diff| %g\n", prefix_blocks, d);
    // Bitwise: every row's matmuls and attention run the same code in the same
    // order whether its history came from this step or an earlier one.
    EXPECT_EQ(d, 0.0f);
    int am_ref = 0, am_hit = 0;
    for (int i = 1; i < vocab; ++i) {
      if (ref[i] > ref[am_ref]) am_ref = i;
      if (hit[i] > hit[am_hit]) am_hit = i;
    }
    EXPECT_EQ(am_ref, am_hit);
  }
}

TEST_F(ModelTest, RejectsBadBatches) {
  KvCache kv(model_->kv_shape(16), 4);
  ThreadPool threads(1);
  std::vector<float> logits;
  std::vector<int32_t> blocks = {0};
  std::vector<int32_t> toks = {1, 2, 3};
  {
    Batch b;
    std::vector<int32_t> bad = {model_->config().vocab};
    b.Add(bad, 0, blocks);
    EXPECT_EQ(model_->Forward(b, kv, threads, &logits).code(), StatusCode::kInvalidArgument);
  }
  {
    Batch b;
    b.Add(toks, 15, blocks);  // needs 2 blocks, has 1
    EXPECT_EQ(model_->Forward(b, kv, threads, &logits).code(), StatusCode::kInvalidArgument);
  }
  {
    Batch b;
    std::vector<int32_t> big = {99};
    b.Add(toks, model_->config().context_length - 1, big);
    EXPECT_EQ(model_->Forward(b, kv, threads, &logits).code(), StatusCode::kOutOfRange);
  }
}

TEST(ModelFileTest, TruncatedModelIsACleanError) {
  if (!std::filesystem::exists(ModelPath()))
    BRISK_SKIP_OR_FAIL_MISSING("default model not installed");
  std::string tmp = ::testing::TempDir() + "/truncated.gguf";
  {
    std::ifstream in(ModelPath(), std::ios::binary);
    std::ofstream out(tmp, std::ios::binary);
    std::vector<char> buf(20 << 20);
    in.read(buf.data(), buf.size());
    out.write(buf.data(), in.gcount());
  }
  auto m = Model::Load(tmp);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("truncated"), std::string::npos) << m.status().message();
  std::filesystem::remove(tmp);
}

}  // namespace
}  // namespace brisk

namespace brisk {
namespace {

// Every position's logits of `tokens` under `model`.
std::vector<float> AllLogits(Model& model, const std::vector<int32_t>& tokens) {
  KvCache kv(model.kv_shape(16), 64);
  KvBlockPool pool(64);
  ThreadPool threads(2);
  std::vector<int32_t> blocks;
  EXPECT_TRUE(pool.Allocate((tokens.size() + 15) / 16, &blocks));
  Batch b;
  b.Add(tokens, 0, blocks, BatchSequence::Logits::kAll);
  std::vector<float> logits;
  EXPECT_TRUE(model.Forward(b, kv, threads, &logits).ok());
  return logits;
}

// Mean KL(p || q) over rows of softmax(logits).
double MeanKld(const std::vector<float>& p_logits, const std::vector<float>& q_logits, int vocab) {
  double sum = 0;
  const size_t rows = p_logits.size() / vocab;
  for (size_t r = 0; r < rows; ++r) {
    const float* a = p_logits.data() + r * vocab;
    const float* b = q_logits.data() + r * vocab;
    const double ma = *std::max_element(a, a + vocab), mb = *std::max_element(b, b + vocab);
    double za = 0, zb = 0;
    for (int i = 0; i < vocab; ++i) {
      za += std::exp(a[i] - ma);
      zb += std::exp(b[i] - mb);
    }
    double kl = 0;
    for (int i = 0; i < vocab; ++i) {
      const double lp = a[i] - ma - std::log(za), lq = b[i] - mb - std::log(zb);
      kl += std::exp(lp) * (lp - lq);
    }
    sum += kl;
  }
  return sum / static_cast<double>(rows);
}

// model.precision at load: F32 conversion is the reference mode's weights;
// Q8_0 and F16 stay close to the file's own Q4_1 (what the gate then
// checks on behaviour); a format whose blocks do not fit is refused.
TEST(ModelPrecisionTest, ConvertedWeightsStayCloseToTheFile) {
  if (!std::filesystem::exists(ModelPath()))
    BRISK_SKIP_OR_FAIL_MISSING("default model not installed");
  auto load = [](std::optional<DType> to, bool reference = false) {
    LoadOptions o;
    o.precision.to = to;
    o.dequantize_to_f32 = reference;
    auto m = Model::Load(ModelPath(), o);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return std::move(*m);
  };
  std::mt19937 rng(5);
  auto native = load(std::nullopt);
  const int vocab = native->config().vocab;
  const std::vector<int32_t> tokens = RandomTokens(rng, 24, vocab);
  const std::vector<float> ref = AllLogits(*load(std::nullopt, true), tokens);
  const std::vector<float> f32 = AllLogits(*load(DType::kF32), tokens);
  EXPECT_LT(MaxAbsDiff(ref.data(), f32.data(), static_cast<int64_t>(ref.size())), 1e-3f);
  const double native_kld = MeanKld(ref, AllLogits(*native, tokens), vocab);
  const double q8_kld = MeanKld(ref, AllLogits(*load(DType::kQ8_0), tokens), vocab);
  const double f16_kld = MeanKld(ref, AllLogits(*load(DType::kF16), tokens), vocab);
  // The file's own path rounds activations to 8 bits; Q8_0 adds one more
  // 8-bit rounding of the weights; F16 weights keep 11 bits.
  EXPECT_LT(native_kld, 0.01);
  EXPECT_LT(q8_kld, 0.02);
  EXPECT_LT(f16_kld, 0.001);
  EXPECT_GT(q8_kld, 0.0);
  // Smaller models load: Q4_0 weights are about half of Q8_0's.
  auto q4 = load(DType::kQ4_0);
  auto q8 = load(DType::kQ8_0);
  EXPECT_LT(q4->weight_bytes(), q8->weight_bytes() * 6 / 10);
  std::printf("KLD to f32 weights: native %.5f, q8_0 %.5f, f16 %.5f\n", native_kld, q8_kld,
              f16_kld);
}

TEST(ModelPrecisionTest, PrecisionNames) {
  EXPECT_FALSE(LoadPrecisionType("native")->to.has_value());
  EXPECT_EQ(LoadPrecisionType("q8_0")->to, DType::kQ8_0);
  EXPECT_EQ(LoadPrecisionType("q8_0")->quantize_row, nullptr);
  EXPECT_EQ(LoadPrecisionType("bf16")->to, DType::kBF16);
  EXPECT_EQ(LoadPrecisionType("int8")->to, DType::kQ8_0);
  EXPECT_NE(LoadPrecisionType("int8")->quantize_row, nullptr);
  EXPECT_EQ(LoadPrecisionType("int4")->to, DType::kQ4_0);
  EXPECT_EQ(LoadPrecisionType("fp8")->to, DType::kFP8_E4M3);
  EXPECT_EQ(LoadPrecisionType("int3").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(LoadPrecisionType("q4_k")->to, DType::kQ4_K);
  EXPECT_EQ(LoadPrecisionType("iq4_nl")->to, DType::kIQ4_NL);
  EXPECT_EQ(LoadPrecisionType("fp8_e4m3").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(LoadPrecisionType("q8_k").status().code(), StatusCode::kUnimplemented);  // no kernels
  // Every name the config accepts loads.
  for (std::string_view name : PrecisionNames()) EXPECT_TRUE(LoadPrecisionType(name).ok()) << name;
  EXPECT_EQ(LoadPrecisionType("q9").status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace brisk
