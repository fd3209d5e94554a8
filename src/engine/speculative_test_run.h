// Test helper shared by the speculative-decoding engine tests (header only,
// included by *_test.cc): runs requests to the end on a fresh engine and
// collects what each produced and what speculation did, checking that no KV
// block of the target or of a draft model is left held.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "util/test_support.h"

namespace brisk {

// Prompts per equality run (greedy with vs without speculation): 32, and 16
// under the sanitizers (still a full batch of 16; the same code paths).
inline constexpr size_t kSpeculativeTestPrompts = kSanitizerBuild ? 16 : 32;

struct SpeculativeRun {
  std::map<int64_t, std::vector<int32_t>> tokens;  // by request id
  std::map<int64_t, std::string> text;
  int64_t drafted = 0, accepted = 0, usage_accepted = 0;
  int64_t preemptions = 0;
  // Decode steps of speculating sequences that had no draft (summed over
  // sequences), and a draft model's prompt reading: positions computed
  // before drafting and positions found in its prefix cache.
  int64_t undrafted = 0;
  int64_t draft_prompt_tokens = 0, draft_cached_tokens = 0;
};

// Prompts for the equality runs: input-grounded ones (prompt lookup finds
// matches) and open ones, then variations, kSpeculativeTestPrompts in all.
inline std::vector<std::string> SpeculativeTestPrompts() {
  const std::vector<std::string> p = {
      "Repeat after me: the quick brown fox jumps over the lazy dog. The quick brown fox",
      "List: apple, banana, cherry, apple, banana, cherry, apple, banana,",
      "def add(a, b):\n    return a + b\n\ndef add(a, b):\n",
      "{\"name\": \"alice\", \"age\": 30}, {\"name\": \"bob\", \"age\": 31}, {\"name\":",
      "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,",
      "The capital of France is",
      "Once upon a time, in a small village,",
      "Monday, Tuesday, Wednesday, Thursday,",
      "for i in range(10):\n    print(i)\nfor j in range(10):\n",
      "Copy this sentence exactly: Paris is a city in France. Copy: Paris",
  };
  std::vector<std::string> all;
  for (size_t i = 0; all.size() < kSpeculativeTestPrompts; ++i)
    all.push_back(i < p.size() ? p[i] : p[i % p.size()] + " " + std::to_string(i));
  return all;
}

// The model at `path` loaded at int8: a lower-precision copy of a target,
// as its draft model (owned by the caller; null and a test failure if it
// does not load).
inline Model* LoadInt8Copy(const std::string& path) {
  auto precision = LoadPrecisionType("int8");
  EXPECT_TRUE(precision.ok());
  LoadOptions lo;
  lo.precision = *precision;
  auto d = Model::Load(path, lo);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(*d).release() : nullptr;
}

inline SpeculativeRun RunToEnd(Model& model, const Tokenizer& tok, const EngineOptions& opts,
                               const std::vector<GenerationRequest>& reqs) {
  Engine e(model, tok, opts);
  SpeculativeRun run;
  for (const auto& r : reqs) {
    auto id = e.Add(r);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
  }
  std::vector<SequenceOutput> outs;
  while (e.HasWork()) {
    outs.clear();
    EXPECT_TRUE(e.Step(&outs).ok());
    run.drafted += e.last_step().spec_draft_tokens;
    run.accepted += e.last_step().spec_accepted_tokens;
    run.undrafted += e.last_step().spec_eligible - e.last_step().spec_drafts;
    run.draft_prompt_tokens += e.last_step().spec_draft_prompt_tokens;
    run.draft_cached_tokens += e.last_step().spec_draft_cached_tokens;
    for (auto& o : outs) {
      auto& t = run.tokens[o.request_id];
      t.insert(t.end(), o.new_tokens.begin(), o.new_tokens.end());
      run.text[o.request_id] += o.text;
      if (o.finished) run.usage_accepted += o.accepted_draft_tokens;
    }
  }
  run.preemptions = e.num_preemptions();
  EXPECT_EQ(e.block_pool().num_used(), 0) << "target KV blocks leaked";
  if (const DraftModelRunner* d = e.speculator().draft_model()) {
    EXPECT_EQ(d->pool().num_used(), 0) << "draft KV blocks leaked";
    EXPECT_EQ(d->tracked(), 0);
  }
  return run;
}

}  // namespace brisk
