// Speculative decoding with a draft model on the real default model: the
// draft is the same file loaded at int8 (a lower-precision copy, as a
// deployment would use), so it agrees with the target often but not always.
// Greedy outputs are the same tokens with and without it (batch 1, batch 16,
// preemption forced, a prompt longer than one catch-up chunk), the draft's
// KV blocks all come back, and a model with another tokenizer is refused.
// The draft reads each prompt while the target prefills it (drafting starts
// at the first decode step) and reads a shared prefix once (its prefix
// cache); a catch-up that cannot pay off is not made.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/default_model_test_base.h"
#include "engine/engine.h"
#include "engine/speculative_test_run.h"

namespace brisk {
namespace {

class EngineDraftModelTest : public DefaultModelTest {
 protected:
  static void SetUpTestSuite() {
    DefaultModelTest::SetUpTestSuite();
    if (model_) draft_ = LoadInt8Copy(ModelPath());
  }
  static void TearDownTestSuite() {
    delete draft_;
    draft_ = nullptr;
    DefaultModelTest::TearDownTestSuite();
  }

  using Run = SpeculativeRun;

  Run RunAll(const EngineOptions& opts, const std::vector<GenerationRequest>& reqs) {
    return RunToEnd(*model_, *tok_, opts, reqs);
  }

  static EngineOptions WithDraft(EngineOptions o) {
    o.speculative.method = SpeculativeOptions::Method::kDraftModel;
    o.speculative.draft_model = draft_;
    o.speculative.num_tokens = 4;
    o.speculative.adaptive = false;  // always draft: the test is about correctness
    o.speculative.max_batch = 64;
    return o;
  }

  std::vector<GenerationRequest> Requests(int max_tokens) {
    std::vector<GenerationRequest> reqs;
    const char* prompts[] = {
        "The capital of France is",
        "Once upon a time, in a small village,",
        "Write a short poem about the sea.",
        "def fib(n):\n",
        "Monday, Tuesday, Wednesday,",
        "The three primary colors are",
        "Explain why the sky is blue in one sentence.",
        "A list of fruits: apple,",
    };
    for (int i = 0; reqs.size() < kSpeculativeTestPrompts; ++i) {
      std::string p = prompts[i % 8];
      if (i >= 8) p.append(1, ' ').append(std::to_string(i));
      reqs.push_back(Greedy(p, max_tokens));
    }
    // Longer than one catch-up chunk of the draft.
    std::string long_prompt;
    while (tok_->Encode(long_prompt, true, false).size() <
           static_cast<size_t>(2 * DraftModelRunner::kMaxCatchUpTokens + 20))
      long_prompt += "Alice met Bob in Lisbon, and they talked about ships and the weather. ";
    reqs.push_back(Greedy(long_prompt + "Where did Alice meet Bob?", max_tokens));
    return reqs;
  }

  inline static Model* draft_ = nullptr;
};

TEST_F(EngineDraftModelTest, GreedyIsIdenticalAtBatch1) {
  EngineOptions o;
  o.scheduler.max_concurrent_sequences = 1;
  const auto reqs = Requests(24);
  const Run off = RunAll(o, reqs);
  const Run on = RunAll(WithDraft(o), reqs);
  EXPECT_EQ(on.tokens, off.tokens);
  EXPECT_GT(on.drafted, 0);
  // An int8 copy of the target mostly agrees with it.
  EXPECT_GT(on.accepted, on.drafted / 2) << "drafted " << on.drafted;
  EXPECT_EQ(on.usage_accepted, on.accepted);
}

TEST_F(EngineDraftModelTest, GreedyIsIdenticalAtBatch16AndUnderPreemption) {
  EngineOptions o;
  o.scheduler.max_concurrent_sequences = 16;
  const auto reqs = Requests(24);
  const Run off = RunAll(o, reqs);
  const Run on = RunAll(WithDraft(o), reqs);
  EXPECT_EQ(on.tokens, off.tokens);
  EXPECT_GT(on.accepted, 0);

  // Pools far too small for 16 sequences (the draft's is as small): the
  // target preempts, the draft drops sequences and catches them up again.
  // (Without the long prompt, which alone needs more blocks than this.)
  EngineOptions tight = o;
  tight.kv_budget_bytes = 12 * model_->kv_shape(16).BytesPerBlock();
  const std::vector<GenerationRequest> short_reqs(reqs.begin(), reqs.end() - 1);
  const Run on_tight = RunAll(WithDraft(tight), short_reqs);
  EXPECT_GT(on_tight.preemptions, 0);
  auto expected = off.tokens;
  expected.erase(static_cast<int64_t>(reqs.size()));  // the long prompt's request id
  EXPECT_EQ(on_tight.tokens, expected);
}

// Requests that share a long system prompt, one after another: the draft
// reads each prompt during the target's prefill, so every decode step
// drafts, and reads the shared part once.
TEST_F(EngineDraftModelTest, DraftReadsPromptsDuringPrefillAndSharedPrefixesOnce) {
  std::string system;
  while (tok_->Encode(system, true, false).size() < 300)
    system += "You are a careful assistant who answers in short sentences about harbours. ";
  std::vector<GenerationRequest> reqs;
  for (const char* q : {"Lisbon is a city", "The river Tagus flows", "A harbour is a place where",
                        "Ships float because"})
    reqs.push_back(Greedy(system + q, 16));
  EngineOptions o;
  o.scheduler.max_concurrent_sequences = 1;
  const Run off = RunAll(o, reqs);
  const Run on = RunAll(WithDraft(o), reqs);
  // What the draft reads of each prompt without a cache: all positions but
  // the newest during the prefill, then that one and the first output token
  // with the first draft (an answer of one token never drafts).
  int64_t prompt_positions = 0;
  size_t i = 0;
  for (const auto& [id, toks] : off.tokens)
    prompt_positions += static_cast<int64_t>(reqs[i++].prompt.size()) + (toks.size() > 1 ? 1 : -1);
  EXPECT_EQ(on.tokens, off.tokens);
  EXPECT_GT(on.drafted, 0);
  EXPECT_EQ(on.undrafted, 0) << "a decode step waited for the draft's catch-up";
  // The later requests found the system prompt's blocks.
  EXPECT_GE(on.draft_cached_tokens, 3 * (300 / 16 - 1) * 16);
  EXPECT_EQ(on.draft_prompt_tokens + on.draft_cached_tokens, prompt_positions);

  // Without a prefix cache (the target's is off too) the draft reads all of it.
  o.scheduler.prefix_cache = false;
  const Run uncached = RunAll(WithDraft(o), reqs);
  EXPECT_EQ(uncached.tokens, off.tokens);
  EXPECT_EQ(uncached.draft_cached_tokens, 0);
  EXPECT_EQ(uncached.draft_prompt_tokens, prompt_positions);
  EXPECT_EQ(uncached.undrafted, 0);

  // Different cache salts (tenants) never share the draft's blocks.
  o.scheduler.prefix_cache = true;
  for (size_t j = 0; j < reqs.size(); ++j) reqs[j].cache_salt = "tenant-" + std::to_string(j);
  const Run salted = RunAll(WithDraft(o), reqs);
  EXPECT_EQ(salted.tokens, off.tokens);
  EXPECT_EQ(salted.draft_cached_tokens, 0);
}

// The adaptive policy weighs the one-time catch-up against what drafting
// can save: an answer of one token has no decode step to draft in, so the
// draft never reads that prompt, even while it still explores (reads every
// prompt until enough drafts were verified).
TEST_F(EngineDraftModelTest, ACatchUpThatCannotPayIsNotMade) {
  EngineOptions o = WithDraft(EngineOptions{});
  o.speculative.adaptive = true;
  o.scheduler.max_concurrent_sequences = 1;
  Engine e(*model_, *tok_, o);
  std::vector<SequenceOutput> outs;
  auto run = [&](const GenerationRequest& r) {
    int64_t read = 0;
    EXPECT_TRUE(e.Add(r).ok());
    while (e.HasWork()) {
      outs.clear();
      EXPECT_TRUE(e.Step(&outs).ok());
      read += e.last_step().spec_draft_prompt_tokens;
    }
    return read;
  };
  EXPECT_GT(run(Greedy("The capital of France is", 8)), 0);  // exploring: it reads
  std::string long_prompt;
  while (tok_->Encode(long_prompt, true, false).size() < 400)
    long_prompt += "Alice met Bob in Lisbon, and they talked about ships and the weather. ";
  EXPECT_EQ(run(Greedy(long_prompt + "Who did Alice meet?", 1)), 0);
  EXPECT_EQ(e.speculator().draft_model()->pool().num_used(), 0);
}

TEST_F(EngineDraftModelTest, SeededSamplingIsDeterministic) {
  EngineOptions o = WithDraft(EngineOptions{});
  auto reqs = Requests(16);
  for (auto& r : reqs) {
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.95f;
    r.sampling.seed = 11;
  }
  const Run a = RunAll(o, reqs);
  const Run b = RunAll(o, reqs);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_GT(a.drafted, 0);
}

TEST_F(EngineDraftModelTest, ADraftNeedsTheTargetsTokenizer) {
  EXPECT_TRUE(CheckDraftVocab(*model_, *draft_).ok());
  const std::string gemma = std::string(BRISK_MODEL_DIR) + "/gemma-3-270m-q4_k_m.gguf";
  if (!std::filesystem::exists(gemma)) GTEST_SKIP() << "Gemma 3 not installed";
  auto g = Model::Load(gemma);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const Status st = CheckDraftVocab(*model_, **g);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("tokenizer"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace brisk
