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

}  // namespace
}  // namespace brisk
