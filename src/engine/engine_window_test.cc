// Sliding-window paging on the real Gemma 3 270M (window 512, 3 global and
// 15 local layers): greedy outputs are the same with and without it (alone,
// batched, from the prefix cache, under preemption), and the KV pages in use
// after a long prompt follow the formula (global layers x context + local
// layers x window, in blocks).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/default_model_test_base.h"

namespace brisk {
namespace {

class EngineWindowTest : public InstalledModelTest<kGemmaModelFile> {
 protected:
  // A prompt of about n tokens (distinct text per seed), BOS first.
  static std::vector<int32_t> Prompt(int n, int seed) {
    std::string text;
    for (int i = 0; text.size() < static_cast<size_t>(n) * 6; ++i)
      text += "Item " + std::to_string(seed * 1000 + i) + " of the ledger is a crate of pears. ";
    auto toks = tok_->Encode(text, true, false);
    toks.resize(static_cast<size_t>(n));
    return toks;
  }
  static EngineOptions Options(bool paging, int64_t kv_bytes = 64ll << 20) {
    EngineOptions o;
    o.window_paging = paging;
    o.kv_budget_bytes = kv_bytes;
    o.scheduler.max_batch_tokens = 256;
    return o;
  }
  // Runs the prompts (added together) greedily; their tokens by prompt.
  static std::vector<std::vector<int32_t>> Run(Engine& e,
                                               const std::vector<std::vector<int32_t>>& prompts,
                                               int max_tokens) {
    std::map<int64_t, size_t> which;
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenerationRequest r;
      r.prompt = prompts[i];
      r.sampling.temperature = 0;
      r.max_tokens = max_tokens;
      auto id = e.Add(r);
      EXPECT_TRUE(id.ok()) << id.status().ToString();
      which[*id] = i;
    }
    std::vector<std::vector<int32_t>> out(prompts.size());
    for (int step = 0; step < 10000 && e.HasWork(); ++step) {
      std::vector<SequenceOutput> outs;
      EXPECT_TRUE(e.Step(&outs).ok());
      for (const auto& o : outs)
        out[which[o.request_id]].insert(out[which[o.request_id]].end(), o.new_tokens.begin(),
                                        o.new_tokens.end());
    }
    return out;
  }
};

TEST_F(EngineWindowTest, GreedyOutputsUnchangedAloneBatchedAndCached) {
  ASSERT_EQ(model_->config().sliding_window, 512);
  const std::vector<std::vector<int32_t>> prompts = {Prompt(900, 1), Prompt(600, 2),
                                                     Prompt(200, 3)};
  Engine plain(*model_, *tok_, Options(false));
  Engine paged(*model_, *tok_, Options(true));
  EXPECT_EQ(plain.kv_cache().shape().local_groups, 0);
  EXPECT_EQ(paged.kv_cache().shape().local_groups, 5);
  const auto want = Run(plain, prompts, 16);
  EXPECT_EQ(Run(paged, prompts, 16), want);
  // Again on the same engine: the long prompts come from the prefix cache as
  // far as their last window is held.
  EXPECT_EQ(Run(paged, {prompts[0]}, 16)[0], want[0]);
  EXPECT_EQ(paged.block_pool().num_used(), 0);
}

TEST_F(EngineWindowTest, PagesAfterALongPromptFollowTheFormula) {
  constexpr int kPrompt = 1536, kBs = 16;
  Engine e(*model_, *tok_, Options(true));
  GenerationRequest r;
  r.prompt = Prompt(kPrompt, 4);
  r.sampling.temperature = 0;
  r.max_tokens = 4;
  ASSERT_TRUE(e.Add(r).ok());
  for (int step = 0; step < kPrompt / 256; ++step) {
    std::vector<SequenceOutput> outs;
    ASSERT_TRUE(e.Step(&outs).ok());
  }
  // Pages of 3 layers: the 3 global layers hold every block, the 15 local
  // layers (5 groups) the 32 blocks of the window before the next token.
  const int64_t blocks = kPrompt / kBs, window_blocks = 512 / kBs;
  EXPECT_EQ(e.block_pool().num_used(), blocks + 5 * window_blocks);
  EXPECT_EQ(e.block_pool().num_used() * 3, 3 * blocks + 15 * window_blocks);
}

TEST_F(EngineWindowTest, GreedyOutputsUnchangedUnderPreemption) {
  // One prompt past the window (its old blocks drop their local pages) and
  // three short ones whose KV grows by 6 pages a block while they decode:
  // 380 pages hold the first three at admission (365), not as they grow.
  const std::vector<std::vector<int32_t>> prompts = {Prompt(600, 5), Prompt(300, 6), Prompt(300, 7),
                                                     Prompt(300, 8)};
  Engine plain(*model_, *tok_, Options(false));
  const auto want = Run(plain, prompts, 64);
  const int64_t page = plain.kv_cache().shape().BytesPerBlock() / 6;
  Engine paged(*model_, *tok_, Options(true, page * 380));
  EXPECT_EQ(Run(paged, prompts, 64), want);
  EXPECT_GT(paged.num_preemptions(), 0);
}

}  // namespace
}  // namespace brisk
