// Prompt logprobs (completions' echo with logprobs) through the whole
// engine on the default model: every prompt position gets a record whatever
// the prefill chunking, the prefix cache never serves such a prompt, and
// the records agree with the logprob the model gives the same token when it
// is generated.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/default_model_test_base.h"
#include "engine/engine.h"

namespace brisk {
namespace {

class EnginePromptLogprobsTest : public DefaultModelTest {
 protected:
  struct Run {
    std::vector<TokenLogprob> prompt, generated;
    int32_t cached = -1;
  };
  // Runs one request to the end.
  static Run RunOne(Engine& e, GenerationRequest r) {
    auto id = e.Add(std::move(r));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    Run out;
    std::vector<SequenceOutput> outs;
    while (e.HasWork()) {
      outs.clear();
      EXPECT_TRUE(e.Step(&outs).ok());
      for (const auto& o : outs) {
        if (!o.prompt_logprobs.empty()) {
          EXPECT_TRUE(out.prompt.empty()) << "prompt records sent twice";
          out.prompt = o.prompt_logprobs;
        }
        out.generated.insert(out.generated.end(), o.logprobs.begin(), o.logprobs.end());
        if (o.finished) out.cached = o.cached_tokens;
      }
    }
    return out;
  }
};

TEST_F(EnginePromptLogprobsTest, EveryPositionAnyChunkingNoCacheAndConsistent) {
  GenerationRequest r = Greedy("The capital of France is Paris, and the capital of Italy is", 2);
  r.logprobs = 3;
  r.prompt_logprobs = true;
  const size_t n = r.prompt.size();
  EngineOptions whole;
  EngineOptions chunked;
  chunked.scheduler.max_batch_tokens = 5;  // the prompt is computed 5 positions at a time
  Engine a(*model_, *tok_, whole), b(*model_, *tok_, chunked);
  Run ra = RunOne(a, r);
  Run rb = RunOne(b, r);
  Run again = RunOne(a, r);  // same prompt, warm prefix cache: still not used
  for (const Run* run : {&ra, &rb, &again}) {
    ASSERT_EQ(run->prompt.size(), n);
    EXPECT_EQ(run->prompt[0].token, r.prompt[0]);
    EXPECT_TRUE(run->prompt[0].top.empty());  // no context: no alternatives
    for (size_t i = 1; i < n; ++i) {
      EXPECT_EQ(run->prompt[i].token, r.prompt[i]);
      EXPECT_EQ(run->prompt[i].top.size(), 3u);
      EXPECT_LE(run->prompt[i].logprob, 0.0f);
      EXPECT_NEAR(run->prompt[i].logprob, ra.prompt[i].logprob, 2e-3) << i;
    }
    EXPECT_EQ(run->cached, 0);
    EXPECT_EQ(run->generated.size(), 2u);
  }
  // Scoring the prompt's last token equals generating it from the rest.
  GenerationRequest shorter = r;
  shorter.prompt.pop_back();
  shorter.prompt_logprobs = false;
  shorter.max_tokens = 1;
  Engine c(*model_, *tok_, whole);
  Run rc = RunOne(c, shorter);
  ASSERT_EQ(rc.generated.size(), 1u);
  bool found = false;
  for (const auto& [id, lp] : rc.generated[0].top)
    if (id == r.prompt.back()) {
      found = true;
      EXPECT_NEAR(lp, ra.prompt.back().logprob, 2e-3);
    }
  EXPECT_TRUE(found) << "the prompt's last token is not in the top 3 after the rest";
  // Requests without prompt logprobs send none.
  EXPECT_TRUE(rc.prompt.empty());
}

}  // namespace
}  // namespace brisk
