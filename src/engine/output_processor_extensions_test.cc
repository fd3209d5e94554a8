// The output processor's request options beyond OpenAI's own (vLLM's names):
// min_tokens, include_stop_str_in_output, skip_special_tokens. Same harness
// as output_processor_test.cc: the default model's tokenizer, a real
// scheduler, hand-made logits rows.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/output_processor.h"
#include "engine/output_processor_test_harness.h"

namespace brisk {
namespace {

// A row where each listed token has a logit of kHigh minus its rank, so the
// first one the processor does not mask wins a greedy draw.
RowFn Ranked(std::vector<int32_t> order) {
  return [order = std::move(order)](const SeqState&, std::span<float> row) {
    std::fill(row.begin(), row.end(), kLow);
    for (size_t i = 0; i < order.size(); ++i) row[order[i]] = kHigh - static_cast<float>(i);
  };
}

TEST_F(OutputProcessorTest, MinTokensMasksEosAndStopTokensUntilReached) {
  ASSERT_GE(Eos(), 0);
  const int32_t halt = Tok1(" halt");
  const int32_t a = Tok1(" a");
  GenerationRequest r = Request(4, 50);
  r.min_tokens = 3;
  r.stop_token_ids = {halt};
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Ranked({Eos(), halt, a}));
  const SampleLog& s = h.at(1, 0);
  // Tokens 1..3 cannot be EOS or the stop token; the 4th may.
  EXPECT_EQ(s.tokens, (std::vector<int32_t>{a, a, a, Eos()}));
  EXPECT_EQ(s.text, " a a a");
  EXPECT_EQ(s.last.reason, FinishReason::kStop);
  EXPECT_EQ(s.last.completion_tokens, 4);
}

TEST_F(OutputProcessorTest, MinTokensWithIgnoreEosMasksOnlyStopTokens) {
  const int32_t halt = Tok1(" halt");
  GenerationRequest r = Request(4, 2);
  r.min_tokens = 2;
  r.ignore_eos = true;
  r.stop_token_ids = {halt};
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Ranked({halt, Eos(), Tok1(" a")}));
  const SampleLog& s = h.at(1, 0);
  EXPECT_EQ(s.tokens, (std::vector<int32_t>{Eos(), Eos()}));  // not a stop with ignore_eos
  EXPECT_EQ(s.last.reason, FinishReason::kLength);
}

TEST_F(OutputProcessorTest, MinTokensDefersStopStrings) {
  const std::vector<int32_t> script = {Tok1(" one"), Tok1(" two"), Tok1(" three"), Tok1(" four")};
  {
    // "two" arrives with token 2 < min_tokens: it does not stop.
    GenerationRequest r = Request(4, 4);
    r.min_tokens = 3;
    r.stop = {"two"};
    OutputHarness h(*tok_, kContext);
    h.Add(1, r);
    h.Run(Script(script));
    EXPECT_EQ(h.at(1, 0).text, " one two three four");
    EXPECT_EQ(h.at(1, 0).last.reason, FinishReason::kLength);
  }
  {
    // "three" arrives with token 3 = min_tokens: it stops there.
    GenerationRequest r = Request(4, 4);
    r.min_tokens = 3;
    r.stop = {"three"};
    OutputHarness h(*tok_, kContext);
    h.Add(1, r);
    h.Run(Script(script));
    EXPECT_EQ(h.at(1, 0).text, " one two ");
    EXPECT_EQ(h.at(1, 0).last.reason, FinishReason::kStop);
    EXPECT_EQ(h.at(1, 0).last.completion_tokens, 3);
  }
}

TEST_F(OutputProcessorTest, MinTokensAppliesToEverySample) {
  ASSERT_GE(Eos(), 0);
  GenerationRequest r = Request(4, 50);
  r.n = 3;
  r.min_tokens = 2;
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Ranked({Eos(), Tok1(" a")}));
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(h.at(1, k).tokens.size(), 3u);
    EXPECT_EQ(h.at(1, k).text, " a a");
    EXPECT_EQ(h.at(1, k).last.reason, FinishReason::kStop);
  }
}

TEST_F(OutputProcessorTest, IncludeStopStrKeepsTheStopStringOnly) {
  // " three" completes "two th"; its "ree" lies past the stop and is cut.
  const std::vector<int32_t> script = {Tok1(" one"), Tok1(" two"), Tok1(" three"), Tok1(" four")};
  GenerationRequest r = Request(4, 50);
  r.stop = {"nothing", "two th"};
  r.include_stop_str_in_output = true;
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Script(script));
  const SampleLog& s = h.at(1, 0);
  EXPECT_EQ(s.text, " one two th");
  EXPECT_EQ(s.last.reason, FinishReason::kStop);
  EXPECT_EQ(s.last.completion_tokens, 3);
}

TEST_F(OutputProcessorTest, IncludeStopStrKeepsStopTokenText) {
  ASSERT_GE(Eos(), 0);
  const int32_t halt = Tok1(" halt");
  {
    GenerationRequest r = Request(4, 50);
    r.stop_token_ids = {halt};
    r.include_stop_str_in_output = true;
    OutputHarness h(*tok_, kContext);
    h.Add(1, r);
    h.Run(Script({Tok1(" one"), halt, Tok1(" two")}));
    EXPECT_EQ(h.at(1, 0).text, " one halt");
    EXPECT_EQ(h.at(1, 0).last.reason, FinishReason::kStop);
  }
  {
    // EOS is a control token: no text unless skip_special_tokens is off.
    GenerationRequest r = Request(4, 50);
    r.include_stop_str_in_output = true;
    OutputHarness h(*tok_, kContext);
    h.Add(1, r);
    h.Run(Script({Tok1(" one"), Eos()}));
    EXPECT_EQ(h.at(1, 0).text, " one");
    r.skip_special_tokens = false;
    OutputHarness h2(*tok_, kContext);
    h2.Add(2, r);
    h2.Run(Script({Tok1(" one"), Eos()}));
    EXPECT_EQ(h2.at(2, 0).text, " one" + tok_->TokenToPiece(Eos(), /*render_special=*/true));
  }
  {
    // Without the option the stop token's text stays out.
    GenerationRequest r = Request(4, 50);
    r.stop_token_ids = {halt};
    r.skip_special_tokens = false;
    OutputHarness h(*tok_, kContext);
    h.Add(1, r);
    h.Run(Script({Tok1(" one"), Eos()}));
    EXPECT_EQ(h.at(1, 0).text, " one");
  }
}

TEST_F(OutputProcessorTest, SkipSpecialTokensFalseRendersControlTokens) {
  ASSERT_GE(Eos(), 0);
  const std::string eos_text = tok_->TokenToPiece(Eos(), /*render_special=*/true);
  ASSERT_FALSE(eos_text.empty());
  const std::vector<int32_t> script = {Tok1(" one"), Eos(), Tok1(" two")};
  for (bool skip : {true, false}) {
    SCOPED_TRACE(skip);
    GenerationRequest r = Request(4, 3);
    r.ignore_eos = true;
    r.skip_special_tokens = skip;
    r.n = 2;
    OutputHarness h(*tok_, kContext);
    h.Add(1, r);
    h.Run(Script(script));
    for (int k = 0; k < 2; ++k)  // forks keep the option
      EXPECT_EQ(h.at(1, k).text, skip ? " one two" : " one" + eos_text + " two");
  }
}

}  // namespace
}  // namespace brisk
