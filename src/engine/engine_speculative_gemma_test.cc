// Speculative decoding on the real Gemma 3 270M (sliding-window layers,
// 262k vocabulary): greedy outputs are the same tokens with and without it,
// for prompt lookup and for a draft model (the same file loaded at int8), at
// batch 1 and 16 and with preemption forced, and no KV block of the target
// or the draft is left held (RunToEnd checks).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/default_model_test_base.h"
#include "engine/engine.h"
#include "engine/speculative_test_run.h"

namespace brisk {
namespace {

class EngineSpeculativeGemmaTest : public InstalledModelTest<kGemmaModelFile> {
 protected:
  static void TearDownTestSuite() {
    delete draft_;
    draft_ = nullptr;
    InstalledModelTest::TearDownTestSuite();
  }

  // An int8 copy of the target as its draft, loaded once.
  static Model* Draft() {
    if (!draft_) draft_ = LoadInt8Copy(ModelPath());
    return draft_;
  }

  static EngineOptions Spec(EngineOptions o, SpeculativeOptions::Method method) {
    o.speculative.method = method;
    if (method == SpeculativeOptions::Method::kDraftModel) o.speculative.draft_model = Draft();
    o.speculative.num_tokens = 4;
    o.speculative.adaptive = false;  // always draft: the test is about correctness
    o.speculative.max_batch = 64;
    return o;
  }

  std::vector<GenerationRequest> Requests() {
    std::vector<GenerationRequest> reqs;
    for (const auto& p : SpeculativeTestPrompts()) reqs.push_back(Greedy(p, 20));
    return reqs;
  }

  // Greedy at `batch` sequences without speculation, with it, and with it
  // in a KV pool far too small for 16 sequences (preemption): the same
  // tokens each time.
  void ExpectSameGreedy(SpeculativeOptions::Method method, int batch) {
    EngineOptions o;
    o.scheduler.max_concurrent_sequences = batch;
    const auto reqs = Requests();
    const SpeculativeRun off = RunToEnd(*model_, *tok_, o, reqs);
    const SpeculativeRun on = RunToEnd(*model_, *tok_, Spec(o, method), reqs);
    EXPECT_EQ(on.tokens, off.tokens);
    EXPECT_EQ(on.text, off.text);
    EXPECT_GT(on.accepted, 0);
    EXPECT_EQ(on.usage_accepted, on.accepted);
    if (batch == 1) return;
    EngineOptions tight = o;
    tight.kv_budget_bytes = 12 * model_->kv_shape(16).BytesPerBlock();
    const SpeculativeRun on_tight = RunToEnd(*model_, *tok_, Spec(tight, method), reqs);
    EXPECT_GT(on_tight.preemptions, 0);
    EXPECT_EQ(on_tight.tokens, off.tokens);
  }

  inline static Model* draft_ = nullptr;
};

TEST_F(EngineSpeculativeGemmaTest, PromptLookupGreedyIsIdenticalAtBatch1) {
  ExpectSameGreedy(SpeculativeOptions::Method::kNgram, 1);
}

TEST_F(EngineSpeculativeGemmaTest, PromptLookupGreedyIsIdenticalAtBatch16AndUnderPreemption) {
  ExpectSameGreedy(SpeculativeOptions::Method::kNgram, 16);
}

TEST_F(EngineSpeculativeGemmaTest, DraftModelGreedyIsIdenticalAtBatch1) {
  ExpectSameGreedy(SpeculativeOptions::Method::kDraftModel, 1);
}

TEST_F(EngineSpeculativeGemmaTest, DraftModelGreedyIsIdenticalAtBatch16AndUnderPreemption) {
  ExpectSameGreedy(SpeculativeOptions::Method::kDraftModel, 16);
}

}  // namespace
}  // namespace brisk
