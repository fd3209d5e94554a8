// Logprobs in the output processor: records are of the raw model row (before
// logit_bias, penalties, masks and temperature), one per emitted token, none
// for a stop token without text, none at all for requests that do not ask,
// and n > 1 forks get their own. Same harness as output_processor_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/output_processor.h"
#include "engine/output_processor_test_harness.h"

namespace brisk {
namespace {

// Runs to the end, collecting every output's logprob records per sample.
std::map<int, std::vector<TokenLogprob>> RunCollect(OutputHarness& h, const RowFn& fill) {
  std::map<int, std::vector<TokenLogprob>> got;
  for (int i = 0; i < 50 && h.sched().HasWork(); ++i)
    for (const SequenceOutput& o : h.Step(fill))
      got[o.index].insert(got[o.index].end(), o.logprobs.begin(), o.logprobs.end());
  return got;
}

TEST_F(OutputProcessorTest, LogprobsAreOfTheRawRowAndSkipTheSilentStopToken) {
  const int32_t a = Tok1(" cat"), b = Tok1(" dog");
  GenerationRequest r = Request(4, 10);
  r.logprobs = 2;
  r.sampling.logit_bias = {{b, -100.0f}};  // the sampler never picks b...
  r.sampling.presence_penalty = 2.0f;
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  int step = 0;
  auto got = RunCollect(h, [&](const SeqState&, std::span<float> row) {
    std::fill(row.begin(), row.end(), kLow);
    if (step++ < 2) {
      row[b] = 10;  // ...but its raw probability is the top one
      row[a] = 5;
    } else {
      row[Eos()] = 10;
    }
  });
  const SampleLog& s = h.at(1, 0);
  ASSERT_EQ(s.tokens.size(), 3u);
  EXPECT_EQ(s.tokens[0], a);
  EXPECT_EQ(s.last.reason, FinishReason::kStop);
  ASSERT_EQ(got[0].size(), 2u);  // the end token produced no text: no record
  const double log_z =
      10 + std::log(1 + std::exp(-5.0) + (tok_->vocab_size() - 2) * std::exp(-110.0));
  for (const TokenLogprob& lp : got[0]) {
    EXPECT_EQ(lp.token, a);
    EXPECT_NEAR(lp.logprob, 5 - log_z, 1e-4);  // no penalty, no bias in it
    ASSERT_EQ(lp.top.size(), 2u);
    EXPECT_EQ(lp.top[0].first, b);
    EXPECT_NEAR(lp.top[0].second, 10 - log_z, 1e-4);
    EXPECT_EQ(lp.top[1].first, a);
  }
}

TEST_F(OutputProcessorTest, NoLogprobsUnlessAskedAndForksGetTheirOwn) {
  const int32_t a = Tok1(" cat");
  GenerationRequest r = Request(4, 3);
  r.ignore_eos = true;
  OutputHarness plain(*tok_, kContext);
  plain.Add(1, r);
  auto none = RunCollect(plain, [&](const SeqState&, std::span<float> row) { Favour(row, a); });
  EXPECT_TRUE(none[0].empty());

  r.n = 3;
  r.logprobs = 0;
  OutputHarness forks(*tok_, kContext);
  forks.Add(1, r);
  auto got = RunCollect(forks, [&](const SeqState&, std::span<float> row) { Favour(row, a); });
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(got[k].size(), 3u) << k;  // length-finished: every token has text
    for (const TokenLogprob& lp : got[k]) {
      EXPECT_EQ(lp.token, a);
      EXPECT_NEAR(lp.logprob, 0.0, 1e-3);
      EXPECT_TRUE(lp.top.empty());
    }
  }
}

}  // namespace
}  // namespace brisk
