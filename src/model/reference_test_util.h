// Shared by the reference-logit tests: fixtures of top-10 log-probs per
// prompt position (from llama.cpp or exact numpy math) and the comparison of a
// model's log-probs against them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "model/model.h"

namespace brisk {

inline const std::string kFixtureDir = std::string(BRISK_SOURCE_DIR) + "/tests/fixtures/";

inline float LogSumExp(const float* x, int n) {
  float mx = *std::max_element(x, x + n);
  double s = 0;
  for (int i = 0; i < n; ++i) s += std::exp(double(x[i]) - mx);
  return mx + static_cast<float>(std::log(s));
}

inline nlohmann::json LoadFixture(const std::string& name) {
  std::ifstream in(kFixtureDir + name);
  EXPECT_TRUE(in) << kFixtureDir + name;
  return nlohmann::json::parse(in);
}

struct Agreement {
  int64_t positions = 0, top1 = 0;
  double max_dlogprob = 0, sum_dlogprob = 0;
  int64_t n = 0;
  double top1_rate() const { return double(top1) / double(positions); }
  double mean() const { return sum_dlogprob / double(n); }
};

// Runs every fixture prompt through `model` and compares log-probs of the
// fixture's top-10 tokens. `logprob(p, i, k)` gives the fixture's value.
template <typename RefLogProb>
Agreement Compare(Model& model, const nlohmann::json& fixture, RefLogProb logprob) {
  const int vocab = model.config().vocab;
  ThreadPool threads(2);
  KvCache kv(model.kv_shape(16), 128);
  std::vector<int32_t> blocks(128);
  for (int i = 0; i < 128; ++i) blocks[i] = i;
  Agreement a;
  for (const auto& p : fixture["prompts"]) {
    std::vector<int32_t> toks = p["tokens"].get<std::vector<int32_t>>();
    Batch b;
    b.Add(toks, 0, blocks, BatchSequence::Logits::kAll);
    std::vector<float> logits;
    EXPECT_TRUE(model.Forward(b, kv, threads, &logits).ok());
    // "from": the fixture records positions [from, size) only.
    const size_t from = p.value("from", size_t{0});
    for (size_t i = from; i < toks.size(); ++i, ++a.positions) {
      const float* row = &logits[i * vocab];
      const float lse = LogSumExp(row, vocab);
      a.top1 += ArgMax(std::span<const float>(row, vocab)) == int32_t(p["top_ids"][i - from][0]);
      for (size_t k = 0; k < p["top_ids"][i - from].size(); ++k) {
        double d = std::fabs(double(row[int32_t(p["top_ids"][i - from][k])]) - lse -
                             logprob(p, i - from, k));
        a.max_dlogprob = std::max(a.max_dlogprob, d);
        a.sum_dlogprob += d;
        ++a.n;
      }
    }
  }
  return a;
}

// Greedy continuation of `prompt`: up to n argmax tokens fed back one at a
// time, stopping after an end token (which is included).
inline std::vector<int32_t> GreedyTokens(Model& model, const std::vector<int32_t>& prompt, size_t n,
                                         const std::vector<int32_t>& end_tokens) {
  const int vocab = model.config().vocab;
  ThreadPool threads(2);
  KvCache kv(model.kv_shape(16), 128);
  std::vector<int32_t> blocks(128);
  for (int i = 0; i < 128; ++i) blocks[i] = i;
  std::vector<int32_t> out;
  std::vector<float> logits;
  Batch b;
  b.Add(prompt, 0, blocks);
  EXPECT_TRUE(model.Forward(b, kv, threads, &logits).ok());
  int32_t pos = static_cast<int32_t>(prompt.size());
  while (out.size() < n) {
    const int32_t t = ArgMax(std::span<const float>(logits.data(), vocab));
    out.push_back(t);
    if (std::find(end_tokens.begin(), end_tokens.end(), t) != end_tokens.end()) break;
    std::vector<int32_t> one = {t};
    b.Clear();
    b.Add(one, pos++, blocks);
    EXPECT_TRUE(model.Forward(b, kv, threads, &logits).ok());
  }
  return out;
}

inline double ExactLogProb(const nlohmann::json& p, size_t i, size_t k) {
  return double(p["top_logprobs"][i][k]);
}

}  // namespace brisk
