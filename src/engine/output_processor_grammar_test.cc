// Structured output in the output processor: the grammar's token mask is
// applied before sampling, the sampled token advances the grammar, n > 1
// forks carry their own grammar state, and unconstrained sequences compute
// no masks. Same harness as output_processor_test.cc.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/output_processor.h"
#include "engine/output_processor_test_harness.h"
#include "grammar/constraint.h"

namespace brisk {
namespace {

std::shared_ptr<const CompiledConstraint> Schema(const char* text) {
  auto c = CompileConstraint({ConstraintSpec::Kind::kJsonSchema, text});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : nullptr;
}

// Random logits: without the mask the model would write anything.
RowFn Noise(uint32_t seed) {
  auto rng = std::make_shared<std::mt19937>(seed);
  return [rng](const SeqState&, std::span<float> row) {
    std::uniform_real_distribution<float> u(-5.0f, 5.0f);
    for (float& x : row) x = u(*rng);
  };
}

TEST_F(OutputProcessorTest, GrammarMaskConstrainsEverySample) {
  const char* schema = R"({"type":"object","properties":{
      "answer":{"enum":["yes","no","maybe"]},"n":{"type":"integer","minimum":0,"maximum":99}},
      "required":["answer","n"],"additionalProperties":false})";
  GenerationRequest r = Request(4, 40);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 11;
  r.n = 3;
  r.constraint = Schema(schema);
  ASSERT_TRUE(r.constraint);
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Noise(5));
  for (int k = 0; k < 3; ++k) {
    const SampleLog& s = h.at(1, k);
    EXPECT_EQ(s.last.reason, FinishReason::kStop) << k << ": " << s.text;
    EXPECT_TRUE(tok_->IsEog(s.tokens.back()));
    const auto doc = nlohmann::json::parse(s.text, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << s.text;
    EXPECT_TRUE(doc["answer"] == "yes" || doc["answer"] == "no" || doc["answer"] == "maybe");
    EXPECT_TRUE(doc["n"].is_number_integer() && doc["n"] >= 0 && doc["n"] <= 99) << s.text;
  }
  EXPECT_FALSE(h.proc().TakeGrammarMaskTimes().empty());
}

TEST_F(OutputProcessorTest, GrammarCutByMaxTokensEndsWithLength) {
  GenerationRequest r = Request(4, 3);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 3;
  r.constraint = Schema(R"({"type":"array","items":{"type":"string"},"minItems":5})");
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Noise(9));
  const SampleLog& s = h.at(1, 0);
  EXPECT_EQ(s.last.reason, FinishReason::kLength);
  EXPECT_EQ(s.text.substr(0, 1), "[");
}

TEST_F(OutputProcessorTest, UnconstrainedSequencesComputeNoMasks) {
  GenerationRequest r = Request(4, 5);
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Noise(1));
  EXPECT_TRUE(h.proc().TakeGrammarMaskTimes().empty());
}

TEST_F(OutputProcessorTest, TrimDraftCutsAtTheFirstTokenTheGrammarRulesOut) {
  GenerationRequest r = Request(4, 20);
  r.constraint = Schema(R"({"type":"object","properties":{"a":{"type":"integer"}},
      "required":["a"],"additionalProperties":false})");
  OutputHarness h(*tok_, kContext);
  const int64_t sid = h.Add(1, r);
  auto ids = [&](const std::string& text) { return tok_->Encode(text, false, false); };
  // Compact JSON: a space after ':' is not allowed, the rest of the object is.
  std::vector<int32_t> draft = ids("{\"a\":");
  const size_t ok = draft.size();
  for (int32_t t : ids(" 1}")) draft.push_back(t);
  h.proc().TrimDraft(sid, &draft);
  EXPECT_EQ(draft.size(), ok);
  // A whole valid object, then the end token: all kept (the end counts once
  // the object is complete); nothing after the end.
  draft = ids("{\"a\":12}");
  const size_t whole = draft.size();
  draft.push_back(*tok_->eos_id());
  draft.push_back(draft[0]);
  h.proc().TrimDraft(sid, &draft);
  EXPECT_EQ(draft.size(), whole + 1);
  // An end token before the object is complete is cut.
  draft = {*tok_->eos_id()};
  h.proc().TrimDraft(sid, &draft);
  EXPECT_TRUE(draft.empty());
  // The sequence's own grammar state did not move: it still starts at '{'.
  draft = ids("{\"a\":1}");
  const size_t again = draft.size();
  h.proc().TrimDraft(sid, &draft);
  EXPECT_EQ(draft.size(), again);
  // Unconstrained: unchanged.
  const int64_t free_sid = h.Add(2, Request(4, 20));
  draft = ids(" anything at all");
  const size_t n = draft.size();
  h.proc().TrimDraft(free_sid, &draft);
  EXPECT_EQ(draft.size(), n);
}

// Masks computed on the mask thread during the "forward pass" are the ones
// computed in Process(): the same samples, token for token, for JSON schema
// and regex sequences mixed with unconstrained ones and forks.
TEST_F(OutputProcessorTest, PrefetchedMasksGiveTheSameSamples) {
  auto run = [&](bool overlap) {
    OutputHarness h(*tok_, kContext);
    h.proc().set_mask_overlap(overlap);
    for (int i = 0; i < 6; ++i) {
      GenerationRequest r = Request(4 + i, 30);
      r.sampling.temperature = 1.0f;
      r.sampling.seed = 100 + i;
      r.n = i == 1 ? 3 : 1;
      if (i % 3 == 0)
        r.constraint = Schema(R"({"type":"object","properties":{"a":{"type":"integer"},
            "b":{"type":"array","items":{"type":"string"}}},"required":["a","b"]})");
      if (i % 3 == 1) {
        auto c = CompileConstraint({ConstraintSpec::Kind::kRegex, "[a-c]+(-[0-9]+)?"});
        EXPECT_TRUE(c.ok());
        if (c.ok()) r.constraint = *c;
      }
      h.Add(i + 1, r);
    }
    h.Run(Noise(21));
    std::vector<std::vector<int32_t>> tokens;
    for (int i = 0; i < 6; ++i)
      for (int k = 0; k < (i == 1 ? 3 : 1); ++k) tokens.push_back(h.at(i + 1, k).tokens);
    return tokens;
  };
  const auto plain = run(false);
  EXPECT_EQ(run(true), plain);
}

}  // namespace
}  // namespace brisk
