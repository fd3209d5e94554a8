// The architecture table and the qwen2 / qwen3 recipes on tiny random-weight
// files written here (the comparison with llama.cpp on larger ones is
// bench/logits_vs_llamacpp.py, run by tests/e2e/test_arch_logits.py).
#include "model/arch_recipe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <random>

#include "model/gguf_writer.h"
#include "model/model.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;
using Rope = ModelConfig::Rope;

TEST(ArchRecipeTest, TableHoldsEachArchitecturesDifferences) {
  const ArchRecipe* llama = FindArchRecipe("llama");
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(llama->rope, Rope::kPairs);
  EXPECT_FALSE(llama->qkv_bias || llama->qk_norm || llama->post_norms);

  const ArchRecipe* qwen2 = FindArchRecipe("qwen2");
  ASSERT_NE(qwen2, nullptr);
  EXPECT_EQ(qwen2->rope, Rope::kNeox);
  EXPECT_EQ(qwen2->activation, ModelConfig::Activation::kSilu);
  EXPECT_TRUE(qwen2->qkv_bias);
  EXPECT_FALSE(qwen2->qk_norm || qwen2->post_norms || qwen2->embed_scale_sqrt_d);
  EXPECT_EQ(qwen2->global_every, 0);

  const ArchRecipe* qwen3 = FindArchRecipe("qwen3");
  ASSERT_NE(qwen3, nullptr);
  EXPECT_EQ(qwen3->rope, Rope::kNeox);
  EXPECT_TRUE(qwen3->qk_norm);
  EXPECT_FALSE(qwen3->qkv_bias || qwen3->post_norms || qwen3->embed_scale_sqrt_d);

  const ArchRecipe* gemma3 = FindArchRecipe("gemma3");
  ASSERT_NE(gemma3, nullptr);
  EXPECT_TRUE(gemma3->qk_norm && gemma3->post_norms && gemma3->embed_scale_sqrt_d);
  EXPECT_EQ(gemma3->global_every, 6);

  EXPECT_EQ(FindArchRecipe("qwen2moe"), nullptr);
  EXPECT_EQ(SupportedArchitectures(), "llama, mistral, gemma3, qwen2, qwen3");
}

// A tiny model: d_model 64, 4 query heads over 2 KV heads, 2 layers, vocab 48.
struct TinyShape {
  std::string arch;
  int head_dim = 16;      // written as key_length/value_length when != 16
  bool biases = true;     // qwen2's attn_{q,k,v}.bias
  bool qk_norms = false;  // qwen3's attn_{q,k}_norm
  float bias_scale = 0.5f;
  int value_length = 0;  // 0: same as head_dim
  // {arch}.rope.scaling.* keys: type "" = none written.
  std::string rope_scaling = "";
  float rope_factor = 1;
  uint32_t rope_original = 0;  // 0: original_context_length not written
  float yarn_log_multiplier = 0;
  bool post_norms = false;  // gemma3's post_attention_norm / post_ffw_norm
  // gemma3's keys; 0 / unset: not written.
  uint32_t sliding_window = 0;
  std::optional<GgufValue> window_pattern = std::nullopt;  // attention.sliding_window_pattern
  float rope_base_swa = 0;                                 // rope.freq_base_swa
  float softcap = 0;                                       // final_logit_softcapping
};

// gemma3 with a window of 2 positions (over the 5 tokens of kTokens).
TinyShape Gemma3() {
  return {
      .arch = "gemma3", .biases = false, .qk_norms = true, .post_norms = true, .sliding_window = 2};
}
const std::vector<int32_t> kTokens = {9, 4, 11, 30, 2};

GgufValue U32(uint32_t v) {
  GgufValue g;
  g.type = GgufType::kUint32;
  g.u = v;
  g.i = v;
  return g;
}

// An array of one flag per layer, as gguf-py's add_sliding_window_pattern writes it.
GgufValue Flags(GgufType type, std::vector<int> flags) {
  GgufValue g;
  g.type = GgufType::kArray;
  g.elem_type = type;
  for (int f : flags) {
    GgufValue e;
    e.type = type;
    e.i = f;
    e.u = static_cast<uint64_t>(f);
    g.arr.push_back(e);
  }
  return g;
}

class ArchModelTest : public ::testing::Test {
 protected:
  static constexpr int kD = 64, kHeads = 4, kKvHeads = 2, kFf = 96, kVocab = 48, kLayers = 2;

  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("brisk_arch_recipe_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the model; every tensor's values depend only on its name, so two
  // files that share a tensor name share its values.
  std::string Write(const TinyShape& s, const std::string& name) {
    const std::string path = (dir_ / name).string();
    GgufWriter w(path);
    auto u32 = [&](const std::string& k, uint32_t v) { w.SetU32(s.arch + "." + k, v); };
    w.SetString("general.architecture", s.arch);
    u32("context_length", 256);
    u32("embedding_length", kD);
    u32("block_count", kLayers);
    u32("feed_forward_length", kFf);
    u32("attention.head_count", kHeads);
    u32("attention.head_count_kv", kKvHeads);
    if (s.head_dim != kD / kHeads) u32("attention.key_length", s.head_dim);
    if (s.value_length != 0) u32("attention.value_length", s.value_length);
    GgufValue eps;
    eps.type = GgufType::kFloat32;
    eps.f = 1e-6;
    w.SetValue(s.arch + ".attention.layer_norm_rms_epsilon", eps);
    auto f32 = [&](const std::string& k, float v) {
      GgufValue g;
      g.type = GgufType::kFloat32;
      g.f = v;
      w.SetValue(s.arch + "." + k, g);
    };
    if (s.sliding_window) u32("attention.sliding_window", s.sliding_window);
    if (s.window_pattern)
      w.SetValue(s.arch + ".attention.sliding_window_pattern", *s.window_pattern);
    if (s.rope_base_swa != 0) f32("rope.freq_base_swa", s.rope_base_swa);
    if (s.softcap != 0) f32("final_logit_softcapping", s.softcap);
    if (!s.rope_scaling.empty()) {
      w.SetString(s.arch + ".rope.scaling.type", s.rope_scaling);
      GgufValue factor = eps;
      factor.f = s.rope_factor;
      w.SetValue(s.arch + ".rope.scaling.factor", factor);
      if (s.rope_original) u32("rope.scaling.original_context_length", s.rope_original);
      if (s.yarn_log_multiplier != 0) {
        GgufValue mul = eps;
        mul.f = s.yarn_log_multiplier;
        w.SetValue(s.arch + ".rope.scaling.yarn_log_multiplier", mul);
      }
    }
    const int q_dim = kHeads * s.head_dim, kv_dim = kKvHeads * s.head_dim;
    std::vector<std::pair<std::string, std::vector<int64_t>>> tensors = {
        {"token_embd.weight", {kD, kVocab}}, {"output_norm.weight", {kD}}};
    for (int l = 0; l < kLayers; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      for (auto& t : std::vector<std::pair<std::string, std::vector<int64_t>>>{
               {"attn_norm.weight", {kD}},
               {"attn_q.weight", {kD, q_dim}},
               {"attn_k.weight", {kD, kv_dim}},
               {"attn_v.weight", {kD, kv_dim}},
               {"attn_output.weight", {q_dim, kD}},
               {"ffn_norm.weight", {kD}},
               {"ffn_gate.weight", {kD, kFf}},
               {"ffn_up.weight", {kD, kFf}},
               {"ffn_down.weight", {kFf, kD}}})
        tensors.push_back({b + t.first, t.second});
      if (s.biases)
        for (auto& [n, dim] : {std::pair{"attn_q.bias", q_dim}, std::pair{"attn_k.bias", kv_dim},
                               std::pair{"attn_v.bias", kv_dim}})
          tensors.push_back({b + n, {dim}});
      if (s.qk_norms) {
        tensors.push_back({b + "attn_q_norm.weight", {s.head_dim}});
        tensors.push_back({b + "attn_k_norm.weight", {s.head_dim}});
      }
      if (s.post_norms) {
        tensors.push_back({b + "post_attention_norm.weight", {kD}});
        tensors.push_back({b + "post_ffw_norm.weight", {kD}});
      }
    }
    for (auto& [n, dims] : tensors) EXPECT_TRUE(w.AddTensor(n, dims, DType::kF32).ok());
    EXPECT_TRUE(w.Begin().ok());
    for (auto& [n, dims] : tensors) {
      std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(n)));
      std::normal_distribution<float> normal;
      const bool is_norm = n.find("norm") != std::string::npos;
      const bool is_bias = n.find(".bias") != std::string::npos;
      std::vector<float> v(dims.size() == 1 ? dims[0] : dims[0] * dims[1]);
      for (float& x : v) {
        const float z = normal(rng);
        x = is_norm   ? 1.f + 0.1f * z
            : is_bias ? s.bias_scale * z
                      : z / std::sqrt(static_cast<float>(dims[0]));
      }
      EXPECT_TRUE(
          w.Append({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)}).ok());
    }
    EXPECT_TRUE(w.Finish().ok());
    return path;
  }

  // Logits of `tokens` at positions 0.. (every position).
  static std::vector<float> Logits(Model& m, const std::vector<int32_t>& tokens) {
    ThreadPool threads(2);
    KvCache kv(m.kv_shape(16), 4);
    std::vector<int32_t> blocks = {0, 1, 2, 3};
    Batch b;
    b.Add(tokens, 0, blocks, BatchSequence::Logits::kAll);
    std::vector<float> logits;
    Status st = m.Forward(b, kv, threads, &logits);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return logits;
  }

  static float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    float m = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
  }

  fs::path dir_;
};

TEST_F(ArchModelTest, Qwen2LoadsWithBiasesAndNeoxRope) {
  auto m = Model::Load(Write({.arch = "qwen2"}, "qwen2.gguf"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.arch, "qwen2");
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_FALSE(c.post_norms);
  EXPECT_EQ(c.rope, Rope::kNeox);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_TRUE(c.tied_output);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
  const std::vector<float> logits = Logits(**m, {1, 7, 3, 40, 2});
  ASSERT_EQ(logits.size(), 5u * kVocab);
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
}

TEST_F(ArchModelTest, Qwen3TakesHeadDimFromKeyLengthAndNormsHeads) {
  // head_dim 32 while embedding_length / head_count = 16.
  auto m = Model::Load(
      Write({.arch = "qwen3", .head_dim = 32, .biases = false, .qk_norms = true}, "qwen3.gguf"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.arch, "qwen3");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.rope, Rope::kNeox);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.rope_dim, 32);
  EXPECT_EQ((*m)->kv_shape().kv_dim(), 2 * 32);
  const std::vector<float> logits = Logits(**m, {5, 6, 7});
  ASSERT_EQ(logits.size(), 3u * kVocab);
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
}

// One token at position 0 attends only to itself (attention returns its v),
// and RoPE at position 0 is the identity: q/k biases and q/k norms cannot
// change its logits, a v bias must. So on the same weights qwen2 with zero
// biases, and qwen3, equal llama there; at later positions they differ.
TEST_F(ArchModelTest, SingleTokenIdentitiesAgainstLlama) {
  auto llama = Model::Load(Write({.arch = "llama", .biases = false}, "llama.gguf"));
  auto zero = Model::Load(Write({.arch = "qwen2", .bias_scale = 0.f}, "zero.gguf"));
  auto biased = Model::Load(Write({.arch = "qwen2"}, "biased.gguf"));
  auto qwen3 = Model::Load(Write({.arch = "qwen3", .biases = false, .qk_norms = true}, "q3"));
  ASSERT_TRUE(llama.ok() && zero.ok() && biased.ok() && qwen3.ok());
  const std::vector<float> ref = Logits(**llama, {9});
  EXPECT_LT(MaxAbsDiff(Logits(**zero, {9}), ref), 1e-4f);
  EXPECT_LT(MaxAbsDiff(Logits(**qwen3, {9}), ref), 1e-4f);
  EXPECT_GT(MaxAbsDiff(Logits(**biased, {9}), ref), 1e-2f);
  // NeoX vs pair-wise RoPE (and the q/k norms) show from the second position.
  EXPECT_GT(MaxAbsDiff(Logits(**zero, {9, 4, 11}), Logits(**llama, {9, 4, 11})), 1e-3f);
  EXPECT_GT(MaxAbsDiff(Logits(**qwen3, {9, 4, 11}), Logits(**llama, {9, 4, 11})), 1e-3f);
}

// The file's context_length is 256 (Write). A file's own linear scaling
// leaves it (it already counts the scaling); an original length times the
// factor extends it; the profile's scaling (LoadOptions) replaces the file's.
TEST_F(ArchModelTest, RopeScalingFromTheFileAndFromTheProfile) {
  using Type = RopeScaling::Type;
  auto yarn = Model::Load(
      Write({.arch = "qwen2", .rope_scaling = "yarn", .rope_factor = 4, .rope_original = 128},
            "yarn.gguf"));
  ASSERT_TRUE(yarn.ok()) << yarn.status().ToString();
  EXPECT_EQ((*yarn)->config().rope_scaling.type, Type::kYarn);
  EXPECT_EQ((*yarn)->config().rope_scaling.factor, 4);
  EXPECT_EQ((*yarn)->config().rope_scaling.original_context, 128);
  EXPECT_EQ((*yarn)->config().context_length, 512);

  auto linear = Model::Load(
      Write({.arch = "qwen2", .rope_scaling = "linear", .rope_factor = 8}, "linear.gguf"));
  ASSERT_TRUE(linear.ok()) << linear.status().ToString();
  EXPECT_EQ((*linear)->config().rope_scaling.type, Type::kLinear);
  EXPECT_EQ((*linear)->config().context_length, 256);

  const std::string plain = Write({.arch = "qwen2"}, "plain.gguf");
  LoadOptions o;
  o.rope_scaling = RopeScaling{.type = Type::kYarn, .factor = 0};  // from context_tokens
  o.context_tokens = 1024;
  auto extended = Model::Load(plain, o);
  ASSERT_TRUE(extended.ok()) << extended.status().ToString();
  EXPECT_EQ((*extended)->config().rope_scaling.factor, 4);
  EXPECT_EQ((*extended)->config().rope_scaling.original_context, 256);
  EXPECT_EQ((*extended)->config().context_length, 1024);

  // "none" in the profile turns a file's scaling off: back to its trained context.
  LoadOptions none;
  none.rope_scaling = RopeScaling{.type = Type::kNone};
  auto off = Model::Load((dir_ / "yarn.gguf").string(), none);
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ((*off)->config().rope_scaling.type, Type::kNone);
  EXPECT_EQ((*off)->config().context_length, 128);
}

// At position 0 RoPE is the identity and a lone token attends only to itself,
// so YaRN (frequencies and magnitude) cannot change its logits; from the
// second position on it must. YaRN with factor 1 is no scaling, bit for bit.
TEST_F(ArchModelTest, YarnChangesLogitsFromTheSecondPosition) {
  auto plain = Model::Load(Write({.arch = "qwen2"}, "plain.gguf"));
  auto yarn = Model::Load(
      Write({.arch = "qwen2", .rope_scaling = "yarn", .rope_factor = 4, .rope_original = 64},
            "yarn.gguf"));
  auto unit = Model::Load(
      Write({.arch = "qwen2", .rope_scaling = "yarn", .rope_factor = 1, .rope_original = 64},
            "unit.gguf"));
  ASSERT_TRUE(plain.ok() && yarn.ok() && unit.ok());
  EXPECT_LT(MaxAbsDiff(Logits(**yarn, {9}), Logits(**plain, {9})), 1e-5f);
  const std::vector<int32_t> three = {9, 4, 11};
  EXPECT_GT(MaxAbsDiff(Logits(**yarn, three), Logits(**plain, three)), 1e-3f);
  EXPECT_EQ(MaxAbsDiff(Logits(**unit, three), Logits(**plain, three)), 0.f);
}

TEST_F(ArchModelTest, UnsupportedOrInvalidRopeScalingIsAnError) {
  auto longrope =
      Model::Load(Write({.arch = "qwen2", .rope_scaling = "longrope"}, "longrope.gguf"));
  ASSERT_FALSE(longrope.ok());
  EXPECT_EQ(longrope.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(longrope.status().message().find("longrope"), std::string::npos);

  auto deepseek = Model::Load(Write(
      {.arch = "qwen2", .rope_scaling = "yarn", .rope_factor = 4, .yarn_log_multiplier = 0.1f},
      "deepseek.gguf"));
  ASSERT_FALSE(deepseek.ok());
  EXPECT_NE(deepseek.status().message().find("yarn_log_multiplier"), std::string::npos);

  auto shrink = Model::Load(
      Write({.arch = "qwen2", .rope_scaling = "linear", .rope_factor = 0.5f}, "shrink.gguf"));
  ASSERT_FALSE(shrink.ok());
  EXPECT_NE(shrink.status().message().find("factor"), std::string::npos);
}

TEST_F(ArchModelTest, MissingOrMismatchedTensorsAreErrors) {
  auto no_bias = Model::Load(Write({.arch = "qwen2", .biases = false}, "nobias.gguf"));
  ASSERT_FALSE(no_bias.ok());
  EXPECT_EQ(no_bias.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_bias.status().message().find("blk.0.attn_q.bias"), std::string::npos);

  auto no_norm = Model::Load(Write({.arch = "qwen3", .biases = false}, "nonorm.gguf"));
  ASSERT_FALSE(no_norm.ok());
  EXPECT_NE(no_norm.status().message().find("attn_q_norm"), std::string::npos);

  auto v_len = Model::Load(
      Write({.arch = "qwen3", .biases = false, .qk_norms = true, .value_length = 8}, "vlen.gguf"));
  ASSERT_FALSE(v_len.ok());
  EXPECT_EQ(v_len.status().code(), StatusCode::kUnimplemented);

  auto unknown = Model::Load(Write({.arch = "qwen2moe", .biases = false}, "moe.gguf"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(unknown.status().message().find("qwen3"), std::string::npos);
}

// Without the keys a gemma3 file gets the recipe's values: every sixth layer
// global (so both of these two are local), RoPE base 10000 on the local
// layers, no softcapping. Writing those values out changes nothing.
TEST_F(ArchModelTest, Gemma3KeysDefaultToTheRecipe) {
  auto m = Model::Load(Write(Gemma3(), "gemma3.gguf"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.sliding_window, 2);
  EXPECT_TRUE(c.IsLocal(0) && c.IsLocal(1));
  EXPECT_EQ(c.rope_theta_local, 10000.f);
  EXPECT_EQ(c.final_logit_softcap, 0.f);
  TinyShape same = Gemma3();
  same.window_pattern = U32(6);
  same.rope_base_swa = 10000;
  auto explicit_keys = Model::Load(Write(same, "same.gguf"));
  ASSERT_TRUE(explicit_keys.ok()) << explicit_keys.status().ToString();
  EXPECT_EQ(MaxAbsDiff(Logits(**explicit_keys, kTokens), Logits(**m, kTokens)), 0.f);
}

// The pattern as a period (layer l global when l % n == n - 1) or as one flag
// per layer (true: sliding-window), bools or integers. Layer 1 global sees
// all 5 tokens instead of 2, which changes the logits.
TEST_F(ArchModelTest, Gemma3SlidingWindowPatternAsPeriodOrPerLayerFlags) {
  TinyShape period = Gemma3(), bools = Gemma3(), ints = Gemma3();
  period.window_pattern = U32(2);
  bools.window_pattern = Flags(GgufType::kBool, {1, 0});
  ints.window_pattern = Flags(GgufType::kInt32, {1, 0});
  auto by_period = Model::Load(Write(period, "period.gguf"));
  auto by_bools = Model::Load(Write(bools, "bools.gguf"));
  auto by_ints = Model::Load(Write(ints, "ints.gguf"));
  auto all_local = Model::Load(Write(Gemma3(), "local.gguf"));
  ASSERT_TRUE(by_period.ok()) << by_period.status().ToString();
  ASSERT_TRUE(by_bools.ok()) << by_bools.status().ToString();
  ASSERT_TRUE(by_ints.ok() && all_local.ok());
  for (const auto* m : {&by_period, &by_bools, &by_ints}) {
    EXPECT_TRUE((**m)->config().IsLocal(0));
    EXPECT_FALSE((**m)->config().IsLocal(1));
  }
  const std::vector<float> ref = Logits(**by_period, kTokens);
  EXPECT_EQ(MaxAbsDiff(Logits(**by_bools, kTokens), ref), 0.f);
  EXPECT_EQ(MaxAbsDiff(Logits(**by_ints, kTokens), ref), 0.f);
  EXPECT_GT(MaxAbsDiff(Logits(**all_local, kTokens), ref), 1e-3f);
}

// rope.freq_base_swa: the local layers' RoPE base. RoPE is the identity at
// position 0, so only the later positions' logits change.
TEST_F(ArchModelTest, Gemma3RopeBaseOfTheSlidingWindowLayers) {
  TinyShape swa = Gemma3();
  swa.rope_base_swa = 1e6f;
  auto base = Model::Load(Write(Gemma3(), "base.gguf"));
  auto m = Model::Load(Write(swa, "swa.gguf"));
  ASSERT_TRUE(base.ok() && m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->config().rope_theta_local, 1e6f);
  EXPECT_EQ(MaxAbsDiff(Logits(**m, {9}), Logits(**base, {9})), 0.f);
  EXPECT_GT(MaxAbsDiff(Logits(**m, kTokens), Logits(**base, kTokens)), 1e-3f);
}

// final_logit_softcapping: logits = cap * tanh(logits / cap).
TEST_F(ArchModelTest, Gemma3FinalLogitSoftcapping) {
  TinyShape capped = Gemma3();
  capped.softcap = 2;
  auto plain = Model::Load(Write(Gemma3(), "plain.gguf"));
  auto m = Model::Load(Write(capped, "capped.gguf"));
  ASSERT_TRUE(plain.ok() && m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->config().final_logit_softcap, 2.f);
  const std::vector<float> a = Logits(**plain, kTokens), b = Logits(**m, kTokens);
  ASSERT_EQ(a.size(), b.size());
  float max_plain = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(b[i], 2 * std::tanh(a[i] / 2), 1e-5f) << i;
    ASSERT_LT(std::fabs(b[i]), 2.f);
    max_plain = std::max(max_plain, std::fabs(a[i]));
  }
  EXPECT_GT(max_plain, 1.f);  // the cap bends some logits
}

TEST_F(ArchModelTest, Gemma3InvalidKeysAreErrors) {
  TinyShape short_pattern = Gemma3(), float_pattern = Gemma3(), period = Gemma3();
  short_pattern.window_pattern = Flags(GgufType::kBool, {1, 0, 1});
  float_pattern.window_pattern = Flags(GgufType::kFloat32, {1, 0});
  period.window_pattern = U32(0);
  period.window_pattern->type = GgufType::kInt32;
  period.window_pattern->i = -1;
  for (const auto& [shape, name] :
       {std::pair{short_pattern, "short"}, std::pair{float_pattern, "float"},
        std::pair{period, "period"}}) {
    auto m = Model::Load(Write(shape, name));
    ASSERT_FALSE(m.ok()) << name;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(m.status().message().find("sliding_window_pattern"), std::string::npos) << name;
  }
  TinyShape negative = Gemma3();
  negative.softcap = -1;
  auto m = Model::Load(Write(negative, "negative.gguf"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("final_logit_softcapping"), std::string::npos);
}

}  // namespace
}  // namespace brisk
