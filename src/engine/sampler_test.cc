#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace brisk {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> LogitsFromProbs(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

std::vector<float> RandomLogits(size_t vocab, uint64_t seed, float scale = 3.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> out(vocab);
  for (float& x : out) x = d(rng);
  return out;
}

// Draws n tokens from fresh copies of `logits` and counts them.
std::vector<int> Histogram(const SamplingParams& p, uint64_t seed, const std::vector<float>& logits,
                           int n) {
  Sampler s(p, seed);
  std::vector<int> counts(logits.size(), 0);
  std::vector<float> work;
  for (int i = 0; i < n; ++i) {
    work = logits;
    const int32_t t = s.Sample(work, {});
    EXPECT_GE(t, 0);
    if (t >= 0) ++counts[t];
  }
  return counts;
}

// Pearson chi-square of observed counts against expected probabilities.
double ChiSquare(const std::vector<int>& counts, const std::vector<double>& probs, int n) {
  double chi = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    const double e = probs[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

std::vector<double> Softmax(const std::vector<float>& logits, float temperature) {
  double m = -1e30;
  for (float l : logits) m = std::max(m, static_cast<double>(l));
  std::vector<double> p;
  double z = 0.0;
  for (float l : logits) {
    p.push_back(std::exp((l - m) / temperature));
    z += p.back();
  }
  for (double& x : p) x /= z;
  return p;
}

TEST(SamplingParamsTest, DefaultsAreValid) {
  SamplingParams p;
  EXPECT_TRUE(p.Validate().ok());
  EXPECT_FALSE(p.greedy());
  EXPECT_FALSE(p.has_penalties());
  p.temperature = 0.0f;
  EXPECT_TRUE(p.greedy());
  p.temperature = 1.0f;
  p.top_k = 1;
  EXPECT_TRUE(p.greedy());
}

TEST(SamplingParamsTest, ValidationNamesFieldAndRange) {
  struct Case {
    void (*set)(SamplingParams&);
    const char* needle;
  };
  const Case cases[] = {
      {[](SamplingParams& p) { p.temperature = 2.5f; }, "temperature must be in [0, 2]"},
      {[](SamplingParams& p) { p.temperature = -0.1f; }, "temperature"},
      {[](SamplingParams& p) { p.temperature = std::nanf(""); }, "temperature"},
      {[](SamplingParams& p) { p.top_k = -1; }, "top_k must be >= 0"},
      {[](SamplingParams& p) { p.top_p = 0.0f; }, "top_p must be in (0, 1]"},
      {[](SamplingParams& p) { p.top_p = 1.01f; }, "top_p"},
      {[](SamplingParams& p) { p.min_p = 1.5f; }, "min_p must be in [0, 1]"},
      {[](SamplingParams& p) { p.repetition_penalty = 0.0f; },
       "repetition_penalty must be in (0, 10]"},
      {[](SamplingParams& p) { p.repetition_penalty = 11.0f; }, "repetition_penalty"},
      {[](SamplingParams& p) { p.frequency_penalty = 2.1f; },
       "frequency_penalty must be in [-2, 2]"},
      {[](SamplingParams& p) { p.presence_penalty = -2.1f; },
       "presence_penalty must be in [-2, 2]"},
      {[](SamplingParams& p) { p.penalty_window = -1; }, "penalty_window must be >= 0"},
      {[](SamplingParams& p) {
         p.logit_bias = {{-1, 1.0f}};
       },
       "logit_bias token id must be >= 0"},
      {[](SamplingParams& p) {
         p.logit_bias = {{3, 100.5f}};
       },
       "logit_bias for token 3 must be in [-100, 100]"},
      {[](SamplingParams& p) {
         p.logit_bias = {{3, std::nanf("")}};
       },
       "logit_bias"},
  };
  for (const Case& c : cases) {
    SamplingParams p;
    c.set(p);
    Status st = p.Validate();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.needle;
    EXPECT_NE(st.message().find(c.needle), std::string::npos) << st.message();
  }
  SamplingParams edge;
  edge.temperature = 2.0f;
  edge.top_p = 1.0f;
  edge.min_p = 1.0f;
  edge.repetition_penalty = 10.0f;
  edge.frequency_penalty = -2.0f;
  edge.presence_penalty = 2.0f;
  edge.logit_bias = {{0, -100.0f}, {7, 100.0f}};
  EXPECT_TRUE(edge.Validate().ok());
}

TEST(SamplerTest, GreedyIsArgMaxLowestIdOnTie) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p, 1);
  std::vector<float> logits = {1.0f, 5.0f, 3.0f, 5.0f};
  EXPECT_EQ(s.Sample(logits, {}), 1);
  std::vector<float> big = RandomLogits(50000, 7);
  const int32_t want = static_cast<int32_t>(std::max_element(big.begin(), big.end()) - big.begin());
  EXPECT_EQ(s.Sample(big, {}), want);
}

TEST(SamplerTest, TopK1EqualsGreedy) {
  SamplingParams p;
  p.top_k = 1;
  p.temperature = 1.5f;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Sampler s(p, seed);
    std::vector<float> logits = RandomLogits(1000, seed + 100);
    const int32_t want = ArgMax(logits);
    EXPECT_EQ(s.Sample(logits, {}), want);
  }
}

TEST(SamplerTest, TinyTemperatureIsArgMax) {
  SamplingParams p;
  p.temperature = 1e-4f;
  Sampler s(p, 3);
  std::vector<float> logits = RandomLogits(5000, 11);
  const int32_t want = ArgMax(logits);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.Sample(logits, {}), want);
}

TEST(SamplerTest, TemperatureZeroAppliesPenaltiesThenArgMax) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  p.top_p = 0.1f;  // ignored by greedy
  Sampler s(p, 1);
  std::vector<float> logits = {3.0f, 2.9f};
  const std::vector<int32_t> history = {0};
  EXPECT_EQ(s.Sample(logits, history), 1);  // 3.0 / 2 = 1.5 < 2.9
}

TEST(SamplerTest, SameSeedSameTokensDifferentSeedDiffers) {
  SamplingParams p;
  p.temperature = 1.0f;
  const std::vector<float> logits = RandomLogits(1000, 5, 1.0f);
  auto run = [&](const SamplingParams& params, uint64_t default_seed) {
    Sampler s(params, default_seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 100; ++i) {
      std::vector<float> work = logits;
      out.push_back(s.Sample(work, out));
    }
    return out;
  };
  EXPECT_EQ(run(p, 42), run(p, 42));
  EXPECT_NE(run(p, 42), run(p, 43));
  // A request seed overrides the engine's default seed.
  SamplingParams seeded = p;
  seeded.seed = 42;
  EXPECT_EQ(run(seeded, 999), run(p, 42));
  EXPECT_EQ(Sampler(seeded, 999).seed(), 42u);
}

TEST(SamplerTest, FrequenciesMatchSoftmax) {
  const std::vector<float> logits = {0.3f, -1.2f, 2.0f, 0.0f, 1.1f, -0.5f, 0.9f, -3.0f};
  const int n = 200000;
  for (float temperature : {1.0f, 0.7f, 1.8f}) {
    SamplingParams p;
    p.temperature = temperature;
    const std::vector<int> counts = Histogram(p, 1234, logits, n);
    // 7 degrees of freedom: P(chi2 > 24.3) = 0.001. Fixed seed => deterministic.
    EXPECT_LT(ChiSquare(counts, Softmax(logits, temperature), n), 24.3) << temperature;
  }
}

TEST(SamplerTest, TopKRenormalizes) {
  const std::vector<float> logits = {0.3f, -1.2f, 2.0f, 0.0f, 1.1f, -0.5f, 0.9f, -3.0f};
  SamplingParams p;
  p.top_k = 3;  // keeps ids 2, 4, 6
  p.temperature = 0.8f;
  const int n = 100000;
  const std::vector<int> counts = Histogram(p, 77, logits, n);
  std::vector<float> kept(logits.size(), kNegInf);
  for (int id : {2, 4, 6}) kept[id] = logits[id];
  // 2 degrees of freedom: P(chi2 > 13.8) = 0.001.
  EXPECT_LT(ChiSquare(counts, Softmax(kept, 0.8f), n), 13.8);
}

TEST(SamplerTest, TopPKeepsMinimalNucleus) {
  // Sorted probabilities 0.5, 0.25, 0.15, 0.1, shuffled over the ids.
  const std::vector<float> logits = LogitsFromProbs({0.15, 0.5, 0.1, 0.25});
  struct Case {
    float top_p;
    std::vector<int> kept;
  };
  const Case cases[] = {
      {0.4f, {1}},           // 0.5 >= 0.4
      {0.7f, {1, 3}},        // 0.5 < 0.7 <= 0.75
      {0.8f, {0, 1, 3}},     // 0.75 < 0.8 <= 0.9
      {0.95f, {0, 1, 2, 3}}  // needs all
  };
  for (const Case& c : cases) {
    SamplingParams p;
    p.top_p = c.top_p;
    const int n = 20000;
    const std::vector<int> counts = Histogram(p, 9, logits, n);
    for (int id = 0; id < 4; ++id) {
      const bool in = std::find(c.kept.begin(), c.kept.end(), id) != c.kept.end();
      if (in) {
        EXPECT_GT(counts[id], 0) << "top_p " << c.top_p << " id " << id;
      } else {
        EXPECT_EQ(counts[id], 0) << "top_p " << c.top_p << " id " << id;
      }
    }
  }
  // Renormalized within the nucleus {1, 3}: 2/3 and 1/3.
  SamplingParams p;
  p.top_p = 0.7f;
  const int n = 60000;
  const std::vector<int> counts = Histogram(p, 10, logits, n);
  EXPECT_LT(ChiSquare(counts, {0.0, 2.0 / 3, 0.0, 1.0 / 3}, n), 10.8);  // 1 dof, p=0.001
}

TEST(SamplerTest, TopPOverFlatVocabUsesIdTieBreak) {
  // 1000 equal logits: the nucleus for 0.5 is exactly 500 tokens, the lowest
  // ids by the tie rule (many quickselect rounds on equal weights).
  const std::vector<float> logits(1000, 0.0f);
  SamplingParams p;
  p.top_p = 0.5f;
  const std::vector<int> counts = Histogram(p, 4, logits, 5000);
  int distinct = 0;
  for (int id = 0; id < 1000; ++id) {
    if (id >= 500) {
      EXPECT_EQ(counts[id], 0) << id;
    }
    distinct += counts[id] > 0;
  }
  EXPECT_GT(distinct, 400);
}

TEST(SamplerTest, MinPDropsTokensBelowThreshold) {
  // max prob 0.5, min_p 0.1 => threshold 0.05: id 2 (0.04) is dropped.
  const std::vector<float> logits = LogitsFromProbs({0.2, 0.5, 0.04, 0.26});
  SamplingParams p;
  p.min_p = 0.1f;
  const int n = 100000;
  const std::vector<int> counts = Histogram(p, 21, logits, n);
  EXPECT_EQ(counts[2], 0);
  const double z = 0.96;
  EXPECT_LT(ChiSquare(counts, {0.2 / z, 0.5 / z, 0.0, 0.26 / z}, n), 16.3);  // 3 dof
}

TEST(SamplerTest, MinPAppliesAfterTemperatureAndTopP) {
  // After temperature 0.5 the probabilities are squared and renormalized:
  // 0.5^2 : 0.3^2 : 0.2^2 = 0.25 : 0.09 : 0.04. min_p 0.3 keeps ratio >= 0.3,
  // i.e. 0.25 and 0.09 (0.36), drops 0.04 (0.16).
  const std::vector<float> logits = LogitsFromProbs({0.2, 0.5, 0.3});
  SamplingParams p;
  p.temperature = 0.5f;
  p.min_p = 0.3f;
  std::vector<int> counts = Histogram(p, 5, logits, 20000);
  EXPECT_EQ(counts[0], 0);
  EXPECT_GT(counts[1], 0);
  EXPECT_GT(counts[2], 0);
  // top_p 0.5 on the same distribution keeps only id 1 (0.25/0.38 = 0.66).
  p.top_p = 0.5f;
  counts = Histogram(p, 5, logits, 5000);
  EXPECT_EQ(counts[1], 5000);
}

TEST(SamplerTest, PenaltiesHandComputed) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  p.penalty_window = 0;  // whole history
  Sampler s(p, 1);
  std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f};
  const std::vector<int32_t> history = {0, 1, 0, 3, 3, 3, -5, 99};  // bad ids ignored
  s.ApplyMaskAndPenalties(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 2.0f / 2 - (2 * 0.5f + 0.25f));   // -0.25
  EXPECT_FLOAT_EQ(logits[1], -1.0f * 2 - (1 * 0.5f + 0.25f));  // -2.75
  EXPECT_FLOAT_EQ(logits[2], 0.5f);                            // not in history
  EXPECT_FLOAT_EQ(logits[3], 3.0f / 2 - (3 * 0.5f + 0.25f));   // -0.25
}

TEST(SamplerTest, PenaltyWindowLooksOnlyAtRecentTokens) {
  SamplingParams p;
  p.frequency_penalty = 1.0f;
  p.penalty_window = 2;
  Sampler s(p, 1);
  std::vector<float> logits = {2.0f, 1.0f, 0.5f, 3.0f};
  const std::vector<int32_t> history = {0, 1, 3, 3};
  s.ApplyMaskAndPenalties(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 2.0f);
  EXPECT_FLOAT_EQ(logits[1], 1.0f);
  EXPECT_FLOAT_EQ(logits[3], 1.0f);  // 3 - 2 * 1
}

TEST(SamplerTest, SampleLeavesPenalizedLogitsInPlace) {
  SamplingParams p;
  p.presence_penalty = 1.0f;
  Sampler s(p, 1);
  std::vector<float> logits = {0.0f, 0.0f};
  const std::vector<int32_t> history = {1};
  s.Sample(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 0.0f);
  EXPECT_FLOAT_EQ(logits[1], -1.0f);
}

TEST(SamplerTest, LogitBiasAddsBeforePenaltiesAndIgnoresIdsPastVocab) {
  SamplingParams p;
  p.presence_penalty = 1.0f;
  p.logit_bias = {{0, 5.0f}, {2, -100.0f}, {9, 50.0f}};  // 9 is past this vocab
  Sampler s(p, 1);
  std::vector<float> logits = {1.0f, 2.0f, 3.0f, 0.5f};
  const std::vector<int32_t> history = {0};
  s.ApplyMaskAndPenalties(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 1.0f + 5.0f - 1.0f);
  EXPECT_FLOAT_EQ(logits[1], 2.0f);
  EXPECT_FLOAT_EQ(logits[2], 3.0f - 100.0f);
  EXPECT_FLOAT_EQ(logits[3], 0.5f);
}

TEST(SamplerTest, LogitBiasSteersGreedyAndSampledDraws) {
  const std::vector<float> logits = {4.0f, 1.0f, 0.0f, 3.0f};
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.logit_bias = {{2, 100.0f}};
  Sampler g(greedy, 1);
  std::vector<float> work = logits;
  EXPECT_EQ(g.Sample(work, {}), 2);

  // -100 on the two likeliest tokens: a draw at temperature 1 practically
  // never picks them (e^-96 relative weight).
  SamplingParams p;
  p.logit_bias = {{0, -100.0f}, {3, -100.0f}};
  Sampler s(p, 5);
  for (int i = 0; i < 2000; ++i) {
    work = logits;
    const int32_t t = s.Sample(work, {});
    EXPECT_TRUE(t == 1 || t == 2) << t;
  }
}

TEST(SamplerTest, LogitBiasKeepsMaskedTokensMasked) {
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.logit_bias = {{0, 100.0f}};
  Sampler g(greedy, 1);
  const std::vector<uint8_t> allowed = {0, 1, 1};
  g.SetMask(allowed);
  std::vector<float> work = {1.0f, 2.0f, 3.0f};
  EXPECT_EQ(g.Sample(work, {}), 2);
  EXPECT_EQ(work[0], kNegInf);
}

TEST(SamplerTest, MaskRestrictsTokens) {
  const std::vector<uint8_t> allowed = {0, 1, 0, 1, 0};
  const std::vector<float> logits = {9.0f, 1.0f, 8.0f, 2.0f, 7.0f};
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  Sampler g(greedy, 1);
  g.SetMask(allowed);
  std::vector<float> work = logits;
  EXPECT_EQ(g.Sample(work, {}), 3);
  g.ClearMask();
  work = logits;
  EXPECT_EQ(g.Sample(work, {}), 0);

  SamplingParams p;
  Sampler s(p, 2);
  s.SetMask(allowed);
  for (int i = 0; i < 1000; ++i) {
    work = logits;
    const int32_t t = s.Sample(work, {});
    EXPECT_TRUE(t == 1 || t == 3) << t;
  }
  const std::vector<uint8_t> none(5, 0);
  s.SetMask(none);
  work = logits;
  EXPECT_EQ(s.Sample(work, {}), -1);
}

TEST(SamplerTest, LargeVocabTopPWithTopK) {
  const std::vector<float> logits = RandomLogits(256000, 8, 2.0f);
  SamplingParams p;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.temperature = 0.8f;
  Sampler s(p, 3);
  std::vector<float> sorted = logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  for (int i = 0; i < 20; ++i) {
    std::vector<float> work = logits;
    const int32_t t = s.Sample(work, {});
    ASSERT_GE(t, 0);
    EXPECT_GE(logits[t], sorted[39]);
  }
  p.top_k = 0;  // top-p alone over the full vocab
  Sampler s2(p, 3);
  for (int i = 0; i < 5; ++i) {
    std::vector<float> work = logits;
    EXPECT_GE(s2.Sample(work, {}), 0);
  }
}

TEST(SamplerTest, NucleusMatchesFullSortReference) {
  // Draws must fall inside the nucleus computed by a full sort, for peaked and
  // flat logits, with and without min-p (exercises the candidate pre-filter
  // and the weighted quickselect).
  for (float scale : {0.3f, 2.0f, 6.0f}) {
    const std::vector<float> logits = RandomLogits(8000, 31, scale);
    for (float top_p : {0.3f, 0.8f, 0.97f}) {
      for (float min_p : {0.0f, 0.02f}) {
        SamplingParams p;
        p.top_p = top_p;
        p.min_p = min_p;
        p.temperature = 0.9f;
        std::vector<double> probs = Softmax(logits, 0.9f);
        std::vector<int> order(probs.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
        std::sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
        std::vector<bool> in(probs.size(), false);
        double cum = 0.0;
        for (int id : order) {
          if (probs[id] < min_p * probs[order[0]]) break;
          in[id] = true;
          cum += probs[id];
          if (cum >= top_p) break;
        }
        const std::vector<int> counts = Histogram(p, 17, logits, 200);
        for (size_t id = 0; id < counts.size(); ++id) {
          if (counts[id] > 0) {
            EXPECT_TRUE(in[id]) << "scale " << scale << " top_p " << top_p << " id " << id;
          }
        }
      }
    }
  }
}

TEST(TopLogprobsTest, MatchesLogSoftmaxSortedDescending) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, kNegInf};
  const double lse = std::log(std::exp(1.0) + std::exp(3.0) + std::exp(2.0));
  auto top = TopLogprobs(logits, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].first, 1);
  EXPECT_NEAR(top[0].second, 3.0 - lse, 1e-6);
  EXPECT_EQ(top[1].first, 2);
  EXPECT_NEAR(top[1].second, 2.0 - lse, 1e-6);

  auto all = TopLogprobs(logits, 100);  // clamped to vocab
  ASSERT_EQ(all.size(), 4u);
  double mass = 0.0;
  for (auto [id, lp] : all) mass += std::exp(lp);
  EXPECT_NEAR(mass, 1.0, 1e-6);
  EXPECT_EQ(all[3].first, 3);
  EXPECT_EQ(all[3].second, kNegInf);
  EXPECT_TRUE(TopLogprobs(logits, 0).empty());
}

}  // namespace
}  // namespace brisk
