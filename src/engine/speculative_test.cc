// Speculative decoding's parts without a model: the rejection sampler (the
// output distribution is the target's: the statistical test of vLLM's design),
// greedy verification, Sampler::Distribution, the n-gram drafter and the
// draft-length policy.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/drafter.h"
#include "engine/rejection_sampler.h"
#include "engine/sampler.h"
#include "engine/spec_policy.h"
#include "engine/speculator.h"

namespace brisk {
namespace {

std::vector<float> RandomDist(std::mt19937_64& rng, size_t vocab, double sharpness = 1.0) {
  std::exponential_distribution<double> e(1.0);
  std::vector<float> p(vocab);
  double z = 0;
  for (auto& x : p) z += x = static_cast<float>(std::pow(e(rng), sharpness));
  for (auto& x : p) x = static_cast<float>(x / z);
  return p;
}

double TotalVariation(const std::vector<double>& a, std::span<const float> b) {
  double tv = 0;
  for (size_t i = 0; i < a.size(); ++i) tv += std::abs(a[i] - b[i]);
  return tv / 2;
}

int32_t DrawFrom(std::span<const float> p, std::mt19937_64& rng) {
  std::discrete_distribution<int32_t> d(p.begin(), p.end());
  return d(rng);
}

SamplingParams Params(float temperature, int top_k = 0, float top_p = 1.0f, float min_p = 0.0f,
                      float repetition_penalty = 1.0f) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.repetition_penalty = repetition_penalty;
  return p;
}

struct Case {
  size_t vocab;
  int k;
  bool draft_model;  // q from a distribution (else deterministic drafts)
};

// Empirical distribution of the first emitted token over n verify steps.
std::vector<double> FirstTokenHistogram(const Case& c, const std::vector<float>& target,
                                        const std::vector<float>& q, size_t n, uint64_t seed) {
  SamplingParams params;
  Sampler sampler(params, seed);
  std::mt19937_64 draft_rng(seed ^ 0xABCDEF);
  std::vector<double> hist(c.vocab, 0.0);
  std::vector<int32_t> draft(c.k);
  std::vector<float> scratch;
  for (size_t t = 0; t < n; ++t) {
    for (int i = 0; i < c.k; ++i)
      draft[i] = c.draft_model ? DrawFrom(std::span(q).subspan(i * c.vocab, c.vocab), draft_rng)
                               : static_cast<int32_t>((t + i) % c.vocab);
    const Verdict v = VerifyDraft(
        draft, target, c.draft_model ? std::span<const float>(q) : std::span<const float>(),
        c.vocab, false, sampler, &scratch);
    hist[v.accepted > 0 ? draft[0] : v.next] += 1;
  }
  for (auto& h : hist) h /= static_cast<double>(n);
  return hist;
}

TEST(RejectionSampler, OutputDistributionConvergesToTheTarget) {
  std::mt19937_64 rng(7);
  for (const Case c :
       {Case{8, 3, true}, Case{8, 3, false}, Case{32, 5, true}, Case{32, 1, false}}) {
    SCOPED_TRACE(testing::Message()
                 << "vocab " << c.vocab << " k " << c.k << " draft model " << c.draft_model);
    std::vector<float> target, q;
    for (int i = 0; i <= c.k; ++i) {
      const auto p = RandomDist(rng, c.vocab);
      target.insert(target.end(), p.begin(), p.end());
      if (i < c.k) {
        const auto d = RandomDist(rng, c.vocab);
        q.insert(q.end(), d.begin(), d.end());
      }
    }
    const std::span<const float> p0(target.data(), c.vocab);
    double prev = 1.0;
    for (size_t n : {1000, 10000, 100000}) {
      const auto hist = FirstTokenHistogram(c, target, q, n, 1234 + n);
      const double tv = TotalVariation(hist, p0);
      // Sampling noise of an exact sampler: E[TV] <= sqrt(V / n) / 2.
      EXPECT_LT(tv, 1.5 * std::sqrt(static_cast<double>(c.vocab) / static_cast<double>(n)))
          << "n " << n;
      if (n > 1000) {
        EXPECT_LT(tv, prev) << "n " << n;
      }
      prev = tv;
      if (n == 100000) {
        // Much closer to the target than to unrelated distributions.
        for (int r = 0; r < 5; ++r)
          EXPECT_GT(TotalVariation(hist, RandomDist(rng, c.vocab)), 10 * tv);
      }
    }
  }
}

TEST(RejectionSampler, SecondTokenAfterAnAcceptedFirstFollowsTheNextRow) {
  // With the first draft token accepted, the next emitted token is drawn
  // from target row 1 (by acceptance of d1 or the residual).
  std::mt19937_64 rng(11);
  const size_t vocab = 6;
  std::vector<float> target, q;
  for (int i = 0; i < 3; ++i) {
    const auto p = RandomDist(rng, vocab);
    target.insert(target.end(), p.begin(), p.end());
  }
  for (int i = 0; i < 2; ++i) {
    const auto d = RandomDist(rng, vocab);
    q.insert(q.end(), d.begin(), d.end());
  }
  Sampler sampler(SamplingParams{}, 99);
  std::mt19937_64 draft_rng(5);
  std::vector<double> hist(vocab, 0.0);
  std::vector<float> scratch;
  size_t n = 0;
  for (int t = 0; t < 200000; ++t) {
    const int32_t d[2] = {DrawFrom(std::span(q).subspan(0, vocab), draft_rng),
                          DrawFrom(std::span(q).subspan(vocab, vocab), draft_rng)};
    const Verdict v = VerifyDraft(d, target, q, vocab, false, sampler, &scratch);
    if (v.accepted == 0) continue;
    hist[v.accepted >= 2 ? d[1] : v.next] += 1;
    ++n;
  }
  for (auto& h : hist) h /= static_cast<double>(n);
  EXPECT_LT(TotalVariation(hist, std::span(target).subspan(vocab, vocab)),
            1.5 * std::sqrt(static_cast<double>(vocab) / static_cast<double>(n)));
}

TEST(RejectionSampler, SeededRunsAreDeterministic) {
  std::mt19937_64 rng(3);
  const size_t vocab = 16;
  std::vector<float> target, q;
  for (int i = 0; i < 5; ++i) {
    const auto p = RandomDist(rng, vocab);
    target.insert(target.end(), p.begin(), p.end());
  }
  for (int i = 0; i < 4; ++i) {
    const auto d = RandomDist(rng, vocab);
    q.insert(q.end(), d.begin(), d.end());
  }
  const int32_t draft[4] = {1, 2, 3, 4};
  auto run = [&](uint64_t seed) {
    SamplingParams params;
    params.seed = seed;
    Sampler s(params, 0);
    std::vector<float> scratch;
    std::vector<std::pair<int, int32_t>> out;
    for (int t = 0; t < 500; ++t) {
      const Verdict v = VerifyDraft(draft, target, q, vocab, false, s, &scratch);
      out.emplace_back(v.accepted, v.next);
    }
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(RejectionSampler, GreedyAcceptsTheLongestArgmaxPrefix) {
  const size_t vocab = 4;
  // Argmax per row: 2, 1, 3, 0.
  const std::vector<float> target = {0.1f, 0.2f, 0.6f, 0.1f, 0.1f, 0.7f, 0.1f,  0.1f,
                                     0.2f, 0.1f, 0.1f, 0.6f, 0.9f, 0.0f, 0.05f, 0.05f};
  Sampler s(Params(0.0f), 1);
  std::vector<float> scratch;
  const int32_t all[3] = {2, 1, 3};
  Verdict v = VerifyDraft(all, target, {}, vocab, true, s, &scratch);
  EXPECT_EQ(v.accepted, 3);
  EXPECT_EQ(v.next, 0);  // the bonus token
  const int32_t miss[3] = {2, 0, 3};
  v = VerifyDraft(miss, target, {}, vocab, true, s, &scratch);
  EXPECT_EQ(v.accepted, 1);
  EXPECT_EQ(v.next, 1);         // the correction: row 1's argmax
  const int32_t none[1] = {7};  // out of the vocabulary: never accepted
  v = VerifyDraft(none, std::span(target).subspan(0, 8), {}, vocab, true, s, &scratch);
  EXPECT_EQ(v.accepted, 0);
  EXPECT_EQ(v.next, 2);
}

TEST(SamplerDistribution, MatchesWhatSampleDraws) {
  std::mt19937_64 rng(17);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> logits(64);
  for (auto& l : logits) l = nd(rng);
  const std::vector<int32_t> history = {1, 2, 2, 5};
  for (const SamplingParams& params :
       {Params(0.7f), Params(1.0f, 5), Params(1.3f, 0, 0.8f), Params(1.0f, 20, 0.9f, 0.05f),
        Params(1.0f, 0, 1.0f, 0.1f, 1.3f)}) {
    Sampler d(params, 1);
    std::vector<float> l = logits, probs;
    d.Distribution(l, history, &probs);
    double sum = 0;
    for (float p : probs) sum += p;
    EXPECT_NEAR(sum, 1.0, 1e-5);
    Sampler s(params, 2);
    std::vector<double> hist(logits.size(), 0.0);
    const int n = 40000;
    for (int i = 0; i < n; ++i) {
      std::vector<float> l2 = logits;
      const int32_t t = s.Sample(l2, history);
      ASSERT_GT(probs[t], 0.0f) << "Sample drew a token outside Distribution's support";
      hist[t] += 1.0 / n;
    }
    EXPECT_LT(TotalVariation(hist, probs), 1.5 * std::sqrt(64.0 / n));
  }
  // Greedy: one-hot at the argmax.
  Sampler g(Params(0.0f), 1);
  std::vector<float> l = logits, probs;
  g.Distribution(l, {}, &probs);
  EXPECT_EQ(probs[ArgMax(logits)], 1.0f);
}

TEST(NgramDrafter, ProposesWhatFollowedTheLatestLongestMatch) {
  NgramDrafter d(1, 3);
  // 5 6 7 8 9 | 1 5 6 7 4 | 5 6 7
  d.Append(std::vector<int32_t>{5, 6, 7, 8, 9, 1, 5, 6, 7, 4, 5, 6, 7});
  std::vector<int32_t> out;
  d.Propose(3, &out, nullptr);
  // "5 6 7" last occurred at 6..8, followed by 4 5 6.
  EXPECT_EQ(out, (std::vector<int32_t>{4, 5, 6}));
  d.Append(std::vector<int32_t>{8});  // now "6 7 8" matches 1..3 -> 9 1 5
  d.Propose(2, &out, nullptr);
  EXPECT_EQ(out, (std::vector<int32_t>{9, 1}));
  d.Propose(0, &out, nullptr);
  EXPECT_TRUE(out.empty());
  d.Append(std::vector<int32_t>{42});  // never seen: no guess
  d.Propose(4, &out, nullptr);
  EXPECT_TRUE(out.empty());
}

// Records that share their field names: the last 2 tokens ("city" "=") occur
// in every record, and the latest place (the previous output record) would
// propose its city. The record being copied is the one whose earlier tokens
// agree with the output's.
TEST(NgramDrafter, PrefersThePlaceWithTheLongestAgreeingContext) {
  NgramDrafter d(1, 2);
  const int name = 1, city = 2, eq = 3;
  // input: name 11 city = 21  name 12 city = 22 | output: name 11 city = 21  name 12 city =
  d.Append(std::vector<int32_t>{name, 11, city, eq, 21, name, 12, city, eq, 22});
  d.Append(std::vector<int32_t>{name, 11, city, eq, 21, name, 12, city, eq});
  std::vector<int32_t> out;
  d.Propose(2, &out, nullptr);
  EXPECT_EQ(out, (std::vector<int32_t>{22, name}));  // the input's second record, not 21
  // A record repeated: the places agree equally far back, the latest wins.
  d.Truncate(3);                                 // ... output: name 11 city = 21  name
  d.Append(std::vector<int32_t>{11, city, eq});  // name 11 city =
  d.Propose(1, &out, nullptr);
  EXPECT_EQ(out, (std::vector<int32_t>{21}));
}

TEST(NgramDrafter, ProposalStopsAtTheEndAndSurvivesTruncation) {
  NgramDrafter d(2, 2);
  d.Append(std::vector<int32_t>{1, 2, 3, 1, 2});
  std::vector<int32_t> out;
  d.Propose(10, &out, nullptr);
  EXPECT_EQ(out, (std::vector<int32_t>{3, 1, 2}));  // up to the end of the sequence
  d.Append(std::vector<int32_t>{9, 1, 2});          // "1 2" now latest at 3..4 -> 9 1 2
  d.Propose(1, &out, nullptr);
  EXPECT_EQ(out, (std::vector<int32_t>{9}));
  d.Truncate(3);  // back to 1 2 3 1 2
  EXPECT_EQ(d.size(), 5u);
  d.Propose(1, &out, nullptr);
  EXPECT_EQ(out, (std::vector<int32_t>{3}));
}

TEST(SpecPolicy, AcceptanceTrackerFollowsTheEvidence) {
  AcceptanceTracker t(0.5, 4, 0.9);
  EXPECT_DOUBLE_EQ(t.alpha(), 0.5);
  for (int i = 0; i < 50; ++i) t.Update(4, 4);
  EXPECT_GT(t.alpha(), 0.95);
  for (int i = 0; i < 50; ++i) t.Update(4, 0);
  EXPECT_LT(t.alpha(), 0.05);
  t.Update(0, 0);  // nothing proposed: no evidence
  EXPECT_LT(t.alpha(), 0.05);
}

TEST(SpecPolicy, ExpectedTokens) {
  EXPECT_DOUBLE_EQ(ExpectedTokens(0.0, 4), 1.0);
  EXPECT_DOUBLE_EQ(ExpectedTokens(1.0, 4), 5.0);
  EXPECT_NEAR(ExpectedTokens(0.5, 2), 1.75, 1e-12);
}

TEST(SpecPolicy, DraftsWhenVerifyIsNearlyFreeAndNotWhenItIsNot) {
  // Memory-bound small batches: a step over 1..16 tokens costs about the same.
  StepCostModel flat;
  for (size_t n : {1, 2, 4, 8, 16}) flat.Observe(n, 0.010 + 0.0001 * static_cast<double>(n));
  EXPECT_EQ(ChooseDraftLength(0.8, 5, 1, 1, flat), 5);
  EXPECT_EQ(ChooseDraftLength(0.0, 5, 1, 1, flat), 0);  // never accepted: never pays
  EXPECT_GT(ChooseDraftLength(0.5, 5, 1, 1, flat), 0);
  // Compute-bound: step time linear in tokens; at 32 sequences a draft costs
  // the whole batch more than it gains.
  StepCostModel linear;
  for (size_t n : {1, 2, 4, 8, 16, 32, 64}) linear.Observe(n, 0.001 * static_cast<double>(n));
  EXPECT_EQ(ChooseDraftLength(0.8, 5, 32, 32, linear), 0);
  EXPECT_EQ(ChooseDraftLength(0.8, 5, 32, 32, flat), 0);  // beyond 16: assumed linear
  EXPECT_EQ(ChooseDraftLength(0.8, 0, 1, 1, flat), 0);
}

TEST(SpecPolicy, PrefillPositionsWeighByTheWorkOutsideTheOutputLayer) {
  // SmolLM2-135M: 30 layers of width 576, a 49,152-token vocabulary.
  ModelConfig smol;
  smol.n_layers = 30, smol.d_model = 576, smol.n_heads = 9, smol.n_kv_heads = 3;
  smol.head_dim = 64, smol.d_ff = 1536, smol.vocab = 49152;
  EXPECT_NEAR(PrefillTokenWeight(smol), 0.79, 0.01);
  // Gemma 3 270M: its 262,144-token output layer outweighs the 18 layers.
  ModelConfig gemma;
  gemma.n_layers = 18, gemma.d_model = 640, gemma.n_heads = 4, gemma.n_kv_heads = 1;
  gemma.head_dim = 256, gemma.d_ff = 2048, gemma.vocab = 262144;
  EXPECT_NEAR(PrefillTokenWeight(gemma), 0.374, 0.01);
  EXPECT_DOUBLE_EQ(PrefillTokenWeight(ModelConfig{}), 1.0);
}

TEST(SpecPolicy, StepCostInterpolatesAndExtrapolates) {
  StepCostModel m;
  EXPECT_DOUBLE_EQ(m.Seconds(8), 8.0);  // nothing measured: linear
  m.Observe(4, 0.004);
  m.Observe(16, 0.008);
  EXPECT_NEAR(m.Seconds(4), 0.004, 1e-12);
  EXPECT_NEAR(m.Seconds(10), 0.004 + 0.004 * 6 / 12, 1e-12);
  EXPECT_NEAR(m.Seconds(64), 0.008 / 16 * 64, 1e-12);
  EXPECT_NEAR(m.Seconds(1), 0.004, 1e-12);
  // Knows: measured at that size or below, not only extrapolated down.
  EXPECT_FALSE(m.Knows(1));
  EXPECT_FALSE(m.Knows(3));
  EXPECT_TRUE(m.Knows(4));
  EXPECT_TRUE(m.Knows(100));
  EXPECT_FALSE(StepCostModel{}.Knows(64));
  // Brackets: measured in that size's bucket, or below and above it (a
  // prefill's cost is not extrapolated from decode steps).
  EXPECT_TRUE(m.Brackets(5));     // bucket 4
  EXPECT_TRUE(m.Brackets(10));    // between 4 and 16
  EXPECT_FALSE(m.Brackets(300));  // only smaller steps seen
  EXPECT_FALSE(m.Brackets(2));    // only larger ones
  EXPECT_FALSE(StepCostModel{}.Brackets(1));
}

TEST(SpecPolicy, StepsWithPrefillDoNotMakeVerifyPositionsLookCheap) {
  // Gemma-like: a prefill position costs 0.375 of a decode position, which
  // also computes a logits row over a large vocabulary.
  StepCostModel m(0.375);
  m.Observe(8, 0, 0.080);  // 8 decode positions: 10 ms each
  // 8 decodes and 56 prefill positions: 29 units, 3.1 ms a unit.
  m.Observe(8, 56, 0.090);
  // Unmeasured by decode steps, a verify step of 32 positions is estimated
  // from the prefill step in units: 32 * 3.1 ms, not 32 * 90 / 64 ms.
  EXPECT_NEAR(m.Seconds(32), 0.090 / 29 * 32, 1e-9);
  // A prefill of 56 positions is 21 units: between the two steps measured.
  EXPECT_NEAR(m.PrefillSeconds(56), 0.080 + 0.010 * (21 - 8) / (29 - 8), 1e-9);
  // Once verify steps of that size are measured, they alone count there.
  m.Observe(32, 0, 0.300);
  m.Observe(8, 40, 0.070);  // 23 units: bucket 16, where no decode step was
  EXPECT_NEAR(m.Seconds(32), 0.300, 1e-9);
  m.Observe(4, 60, 0.050);  // 26.5 units -> 27: bucket 16 again, not 32
  EXPECT_NEAR(m.Seconds(32), 0.300, 1e-9);
  // A model without the weight (a draft model's rounds) is the plain one.
  StepCostModel plain;
  plain.Observe(4, 0.004);
  plain.Observe(0, 16, 0.008);
  EXPECT_NEAR(plain.Seconds(16), 0.008, 1e-12);
  EXPECT_NEAR(plain.PrefillSeconds(16), 0.008, 1e-12);
}

TEST(SpecPolicy, SmallStepsAreKeptBySizeLargeOnesByPowersOfTwo) {
  // A kernel that reads the weights once per 8 columns: the 9th position
  // costs a pass of its own.
  StepCostModel m;
  m.Observe(8, 0.020);
  m.Observe(9, 0.027);
  m.Observe(16, 0.034);
  EXPECT_NEAR(m.Seconds(8), 0.020, 1e-12);
  EXPECT_NEAR(m.Seconds(9), 0.027, 1e-12);
  EXPECT_NEAR(m.Seconds(12), 0.027 + 0.007 * 3 / 7, 1e-12);
  // At 8 sequences a draft token does not pay even if always accepted.
  EXPECT_EQ(ChooseDraftLength(1.0, 4, 8, 8, m), 0);
  // From 128 tokens on, one bucket per power of two.
  m.Observe(128, 0.256);
  m.Observe(200, 0.300);  // 1.5 ms a token: the bucket's mean moves
  EXPECT_NEAR(m.Seconds(128), 128 * (0.8 * 0.002 + 0.2 * 0.0015), 1e-12);
  EXPECT_EQ(m.Largest(), 128u);
  EXPECT_TRUE(m.Brackets(150));
  EXPECT_FALSE(m.Brackets(300));
  EXPECT_NEAR(m.Seconds(1000), 1000 * (0.8 * 0.002 + 0.2 * 0.0015), 1e-12);
}

TEST(SpecPolicy, TheOthersDraftsCountWithTheTokensTheyBring) {
  // 10 ms a step plus 1 ms a position.
  StepCostModel m;
  for (size_t n : {8, 16, 32}) m.Observe(n, 0.010 + 0.001 * static_cast<double>(n));
  ASSERT_NEAR(m.Seconds(12), 0.022, 1e-12);
  // 8 sequences; the first drafted 4 tokens at acceptance 0.95.
  const double first = ExpectedTokens(0.95, 4) - 1;
  EXPECT_EQ(ChooseDraftLength(0.95, 4, 8, 8, m), 4);
  // A second one at 0.8: against a step of 12 positions counted as 8
  // tokens its drafts look cheap; against the 11.5 tokens the step is
  // expected to yield they do not pay.
  EXPECT_EQ(ChooseDraftLength(0.8, 4, 8, 12, m, 1.05, 0, 0), 4);
  EXPECT_EQ(ChooseDraftLength(0.8, 4, 8, 12, m, 1.05, 0, first), 0);
}

TEST(SpecPolicy, ADraftModelsTimeCountsAgainstItsDrafts) {
  // Verify nearly free, as at batch 1 on a memory-bound CPU.
  StepCostModel flat;
  for (size_t n : {1, 2, 4, 8, 16}) flat.Observe(n, 0.010);
  EXPECT_EQ(ChooseDraftLength(0.9, 5, 1, 1, flat, 1.05, 0.0), 5);
  // A draft token costing 40% of a step: fewer, but still worth it at 0.9.
  const int k = ChooseDraftLength(0.9, 5, 1, 1, flat, 1.05, 0.004);
  EXPECT_GT(k, 0);
  EXPECT_LT(k, 5);
  // A draft as slow as the target never pays: E(k) < 1 + k.
  EXPECT_EQ(ChooseDraftLength(0.9, 5, 1, 1, flat, 1.05, 0.010), 0);
  // At acceptance 0.3 a 30% draft does not pay either (1.3 / 1.3 < 1.05).
  EXPECT_EQ(ChooseDraftLength(0.3, 5, 1, 1, flat, 1.05, 0.003), 0);
}

TEST(SpecPolicy, SavedSecondsPerTokenWeighsAStepAgainstItsTokens) {
  StepCostModel flat;
  for (size_t n : {1, 2, 4, 8, 16}) flat.Observe(n, 0.010);
  // Free verification, no draft cost: 10 ms a token becomes 10 ms per E(4).
  EXPECT_NEAR(SavedSecondsPerToken(0.9, 4, 1, flat), 0.010 - 0.010 / ExpectedTokens(0.9, 4), 1e-12);
  // A draft token at 4 ms: 10 ms against (10 + 16) / 4.1 ms.
  EXPECT_NEAR(SavedSecondsPerToken(0.9, 4, 1, flat, 0.004), 0.010 - 0.026 / ExpectedTokens(0.9, 4),
              1e-12);
  // A draft as slow as the target loses time.
  EXPECT_LT(SavedSecondsPerToken(0.9, 4, 1, flat, 0.010), 0);
  EXPECT_EQ(SavedSecondsPerToken(0.9, 0, 1, flat), 0);
}

}  // namespace
}  // namespace brisk
