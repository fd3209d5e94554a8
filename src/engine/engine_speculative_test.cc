// Speculative decoding on the real default model: greedy outputs are the
// same tokens with and without it (at batch 1 and 16, and with preemption
// forced), seeded sampling stays deterministic, and drafts are actually
// verified and accepted on input-grounded prompts, with and without a
// structured-output constraint.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/default_model_test_base.h"
#include "engine/engine.h"
#include "engine/speculative_test_run.h"
#include "grammar/constraint.h"

namespace brisk {
namespace {

class EngineSpeculativeTest : public DefaultModelTest {
 protected:
  using Run = SpeculativeRun;

  static std::vector<std::string> Prompts() { return SpeculativeTestPrompts(); }

  Run RunPrompts(const EngineOptions& opts, const std::vector<GenerationRequest>& reqs) {
    return RunToEnd(*model_, *tok_, opts, reqs);
  }

  static EngineOptions Spec(EngineOptions o) {
    o.speculative.method = SpeculativeOptions::Method::kNgram;
    o.speculative.num_tokens = 4;
    o.speculative.adaptive = false;  // always draft: the test is about correctness
    o.speculative.max_batch = 64;
    return o;
  }

  std::vector<GenerationRequest> GreedyRequests(int max_tokens) {
    std::vector<GenerationRequest> reqs;
    for (const auto& p : Prompts()) reqs.push_back(Greedy(p, max_tokens));
    return reqs;
  }
};

TEST_F(EngineSpeculativeTest, GreedyIsIdenticalAtBatch1) {
  EngineOptions o;
  o.scheduler.max_concurrent_sequences = 1;
  const auto reqs = GreedyRequests(24);
  const Run off = RunPrompts(o, reqs);
  const Run on = RunPrompts(Spec(o), reqs);
  EXPECT_EQ(on.tokens, off.tokens);
  EXPECT_EQ(on.text, off.text);
  EXPECT_GT(on.drafted, 0);
  EXPECT_GT(on.accepted, on.drafted / 10) << "drafted " << on.drafted;
  EXPECT_EQ(on.usage_accepted, on.accepted);
  EXPECT_EQ(off.drafted, 0);
}

TEST_F(EngineSpeculativeTest, GreedyIsIdenticalAtBatch16AndUnderPreemption) {
  EngineOptions o;
  o.scheduler.max_concurrent_sequences = 16;
  const auto reqs = GreedyRequests(24);
  const Run off = RunPrompts(o, reqs);
  const Run on = RunPrompts(Spec(o), reqs);
  EXPECT_EQ(on.tokens, off.tokens);
  EXPECT_EQ(on.text, off.text);
  EXPECT_GT(on.accepted, 0);

  // A KV pool far too small for 16 sequences: preemption all the way.
  EngineOptions tight = o;
  tight.kv_budget_bytes = 12 * model_->kv_shape(16).BytesPerBlock();
  const Run on_tight = RunPrompts(Spec(tight), reqs);
  EXPECT_GT(on_tight.preemptions, 0);
  EXPECT_EQ(on_tight.tokens, off.tokens);
}

TEST_F(EngineSpeculativeTest, SeededSamplingIsDeterministicAndStopsStillApply) {
  EngineOptions o = Spec(EngineOptions{});
  std::vector<GenerationRequest> reqs;
  for (const auto& p : Prompts()) {
    GenerationRequest r = Greedy(p, 20);
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.95f;
    r.sampling.seed = 7;
    r.stop = {"banana"};
    reqs.push_back(r);
  }
  const Run a = RunPrompts(o, reqs);
  const Run b = RunPrompts(o, reqs);
  EXPECT_EQ(a.tokens, b.tokens);
  for (const auto& [id, text] : a.text) EXPECT_EQ(text.find("banana"), std::string::npos) << text;
  // Opted out: no drafts at all.
  for (auto& r : reqs) r.speculate = false;
  EXPECT_EQ(RunPrompts(o, reqs).drafted, 0);
}

std::shared_ptr<const CompiledConstraint> Compile(ConstraintSpec::Kind kind, const char* text) {
  auto c = CompileConstraint({kind, text});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : nullptr;
}

// Structured output speculates: each verified row is masked by the grammar
// state after the drafts before it, so the tokens are those of constrained
// plain decoding, and drafts the grammar rules out are simply rejected.
TEST_F(EngineSpeculativeTest, ConstrainedGreedyIsIdenticalAndDraftsAreAccepted) {
  const auto person = Compile(ConstraintSpec::Kind::kJsonSchema, R"({"type":"object",
      "properties":{"name":{"type":"string"},"age":{"type":"integer"},"city":{"type":"string"}},
      "required":["name","age","city"],"additionalProperties":false})");
  const auto digits = Compile(ConstraintSpec::Kind::kRegex, R"(\[[0-9]+(, [0-9]+)*\])");
  const std::vector<std::string> json_prompts = {
      "Rewrite as JSON: name alice, age 30, city Paris. Also: {\"name\": \"alice\", \"age\": "
      "30, \"city\": \"Paris\"}\nJSON:",
      "{\"name\": \"bob\", \"age\": 41, \"city\": \"Oslo\"}\nThe same record again:",
      "People: Carol (52) lives in Lima. Dan (19) lives in Rome. Carol as JSON:",
      "Write a person as JSON.",
  };
  std::vector<GenerationRequest> reqs;
  for (const auto& p : json_prompts) {
    GenerationRequest r = Greedy(p, 40);
    r.constraint = person;
    reqs.push_back(r);
  }
  for (const char* p : {"1, 2, 3, 4, 5, 6, 7, 8 as a list: [1, 2, 3,", "Primes: [2, 3, 5, 7"}) {
    GenerationRequest r = Greedy(p, 30);
    r.constraint = digits;
    reqs.push_back(r);
  }
  for (int batch : {1, 6}) {
    EngineOptions o;
    o.scheduler.max_concurrent_sequences = batch;
    const Run off = RunPrompts(o, reqs);
    const Run on = RunPrompts(Spec(o), reqs);
    EXPECT_EQ(on.tokens, off.tokens) << "batch " << batch;
    EXPECT_EQ(on.text, off.text) << "batch " << batch;
    EXPECT_GT(on.drafted, 0);
    EXPECT_GT(on.accepted, 0) << "drafted " << on.drafted;
    EXPECT_EQ(on.usage_accepted, on.accepted);
    // Masks overlapped with the forward pass (on their own thread) change nothing.
    EngineOptions ov = o;
    ov.mask_overlap = EngineOptions::MaskOverlap::kOn;
    EXPECT_EQ(RunPrompts(ov, reqs).tokens, off.tokens) << "batch " << batch;
  }
  // Seeded sampling under the constraint stays deterministic with drafts.
  for (auto& r : reqs) {
    r.sampling.temperature = 0.7f;
    r.sampling.seed = 11;
  }
  EngineOptions o = Spec(EngineOptions{});
  const Run a = RunPrompts(o, reqs);
  EXPECT_EQ(RunPrompts(o, reqs).tokens, a.tokens);
}

}  // namespace
}  // namespace brisk
