// Regex / choice / GBNF constraints in the output processor: the Earley
// matcher's mask applies before sampling, the sampled token advances it,
// n > 1 forks carry their own chart. Same harness as
// output_processor_test.cc; random logits, so only the mask keeps the text
// in the language.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

#include "engine/output_processor.h"
#include "engine/output_processor_test_harness.h"
#include "grammar/constraint.h"

namespace brisk {
namespace {

RowFn Noise(uint32_t seed) {
  auto rng = std::make_shared<std::mt19937>(seed);
  return [rng](const SeqState&, std::span<float> row) {
    std::uniform_real_distribution<float> u(-5.0f, 5.0f);
    for (float& x : row) x = u(*rng);
  };
}

std::shared_ptr<const CompiledConstraint> Compile(ConstraintSpec::Kind kind, const char* text) {
  auto c = CompileConstraint({kind, text});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : nullptr;
}

TEST_F(OutputProcessorTest, RegexConstrainsEveryFork) {
  const char* pattern = R"((yes|no)-\d{2}[a-c]?)";
  GenerationRequest r = Request(4, 40);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 3;
  r.n = 3;
  r.constraint = Compile(ConstraintSpec::Kind::kRegex, pattern);
  ASSERT_TRUE(r.constraint);
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Noise(9));
  for (int k = 0; k < 3; ++k) {
    const SampleLog& s = h.at(1, k);
    EXPECT_EQ(s.last.reason, FinishReason::kStop) << k << ": " << s.text;
    EXPECT_TRUE(std::regex_match(s.text, std::regex(pattern))) << s.text;
  }
  EXPECT_FALSE(h.proc().TakeGrammarMaskTimes().empty());
}

TEST_F(OutputProcessorTest, ChoiceAndGbnf) {
  GenerationRequest r = Request(4, 40);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 5;
  r.constraint = Compile(ConstraintSpec::Kind::kChoice, R"(["red","green","blue"])");
  ASSERT_TRUE(r.constraint);
  GenerationRequest g = Request(4, 40);
  g.sampling.temperature = 1.0f;
  g.sampling.seed = 6;
  g.constraint =
      Compile(ConstraintSpec::Kind::kGrammar, "root ::= \"[\" [0-9] (\",\" [0-9])* \"]\"");
  ASSERT_TRUE(g.constraint);
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Add(2, g);
  h.Run(Noise(2));
  const std::string c = h.at(1, 0).text;
  EXPECT_TRUE(c == "red" || c == "green" || c == "blue") << c;
  const SampleLog& s = h.at(2, 0);
  if (s.last.reason == FinishReason::kStop) {
    EXPECT_TRUE(std::regex_match(s.text, std::regex(R"(\[[0-9](,[0-9])*\])"))) << s.text;
  } else {
    EXPECT_TRUE(std::regex_match(s.text, std::regex(R"(\[([0-9],?)*)"))) << s.text;
  }
}

}  // namespace
}  // namespace brisk
