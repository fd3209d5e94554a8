// Lazy constraints in the output processor (engine/lazy_constraint.h): free
// text until the trigger, then the grammar's mask; the output that completes
// the trigger says where the constrained text begins. Same harness as
// output_processor_test.cc.
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

constexpr const char* kCallSchema = R"({"type":"object","properties":{
    "name":{"const":"get_weather"},"arguments":{"type":"object","properties":{
    "city":{"type":"string","maxLength":8}},"required":["city"],"additionalProperties":false}},
    "required":["name","arguments"],"additionalProperties":false})";

std::shared_ptr<const CompiledConstraint> CallConstraint() {
  auto c = CompileConstraint({ConstraintSpec::Kind::kJsonSchema, kCallSchema});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : nullptr;
}

struct Split {
  std::string content;      // text before the constrained part
  std::string constrained;  // from constrained_from on
  int triggers = 0;
  FinishReason reason = FinishReason::kNone;
};

// Runs one request: `script` tokens first, then random logits (which only
// the grammar's mask can turn into a call).
Split RunLazy(OutputHarness& h, const GenerationRequest& r, std::vector<int32_t> script) {
  auto rng = std::make_shared<std::mt19937>(7);
  const RowFn fill = [&script, rng](const SeqState& st, std::span<float> row) {
    const size_t g = static_cast<size_t>(st.num_generated());
    if (g < script.size()) return Favour(row, script[g]);
    std::uniform_real_distribution<float> u(-5.0f, 5.0f);
    for (float& x : row) x = u(*rng);
  };
  h.Add(1, r);
  Split s;
  bool in_call = false;
  for (int i = 0; i < 200 && h.sched().HasWork(); ++i) {
    for (const SequenceOutput& o : h.Step(fill)) {
      std::string_view text = o.text;
      if (!in_call && o.constrained_from >= 0) {
        ++s.triggers;
        in_call = true;
        s.content += text.substr(0, static_cast<size_t>(o.constrained_from));
        text.remove_prefix(static_cast<size_t>(o.constrained_from));
      } else if (o.constrained_from >= 0) {
        ++s.triggers;
      }
      (in_call ? s.constrained : s.content) += text;
      if (o.finished) s.reason = o.reason;
    }
  }
  return s;
}

TEST_F(OutputProcessorTest, LazyMarkerAfterTextStartsTheGrammar) {
  GenerationRequest r = Request(4, 60);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 5;
  r.constraint = CallConstraint();
  r.constraint_trigger = {"<tool_call>", false, false};
  OutputHarness h(*tok_, kContext);
  std::vector<int32_t> script = Tok("Let me look. <tool_call>");
  const Split s = RunLazy(h, r, script);
  EXPECT_EQ(s.triggers, 1);
  EXPECT_EQ(s.content, "Let me look. ");
  EXPECT_EQ(s.reason, FinishReason::kStop) << s.constrained;
  const auto doc = nlohmann::json::parse(s.constrained, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << s.constrained;
  EXPECT_EQ(doc["name"], "get_weather");
  EXPECT_TRUE(doc["arguments"]["city"].is_string());
  EXPECT_FALSE(h.proc().TakeGrammarMaskTimes().empty());
}

TEST_F(OutputProcessorTest, LazyJsonStartKeepsTheTriggerInTheCall) {
  GenerationRequest r = Request(4, 60);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 9;
  r.constraint = CallConstraint();
  r.constraint_trigger = {"{\"name\"", true, true};
  OutputHarness h(*tok_, kContext);
  // The script then favours " \"" (a space the compact grammar does not
  // take): the mask leaves only the grammar's own "\"".
  const Split s = RunLazy(h, r, Tok("{\"name\": \""));
  EXPECT_EQ(s.triggers, 1);
  EXPECT_EQ(s.content, "");
  ASSERT_TRUE(s.constrained.starts_with("{\"name\":\"get_weather\"")) << s.constrained;
  EXPECT_FALSE(nlohmann::json::parse(s.constrained, nullptr, false).is_discarded())
      << s.constrained;
  EXPECT_EQ(s.reason, FinishReason::kStop);
}

// Parallel calls after a marker (ConstraintSpec::separator): the scripted
// model writes two calls in the template's tags, then ends; the second
// call and the separator go through the grammar's mask.
TEST_F(OutputProcessorTest, LazyMarkerThenSeveralCallsInTheTemplatesTags) {
  auto c = CompileConstraint(
      {ConstraintSpec::Kind::kJsonSchema, kCallSchema, "\n</tool_call>\n<tool_call>\n"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  GenerationRequest r = Request(4, 80);
  r.constraint = *c;
  r.constraint_trigger = {"<tool_call>", false, false};
  OutputHarness h(*tok_, kContext);
  const std::string calls = R"({"name":"get_weather","arguments":{"city":"Paris"}})"
                            "\n</tool_call>\n<tool_call>\n"
                            R"({"name":"get_weather","arguments":{"city":"Oslo"}})";
  std::vector<int32_t> script = Tok("Two cities.<tool_call>" + calls);
  script.push_back(Eos());
  const Split s = RunLazy(h, r, script);
  EXPECT_EQ(s.triggers, 1);
  EXPECT_EQ(s.content, "Two cities.");
  EXPECT_EQ(s.constrained, calls);
  EXPECT_EQ(s.reason, FinishReason::kStop);
}

TEST_F(OutputProcessorTest, LazyWithoutTriggerIsPlainTextWithoutMasks) {
  GenerationRequest r = Request(4, 6);
  r.constraint = CallConstraint();
  r.constraint_trigger = {"<tool_call>", false, false};
  OutputHarness h(*tok_, kContext);
  // Ends on a partial trigger: flushed as content at the end.
  const Split s = RunLazy(h, r, Tok(" a <tool"));
  EXPECT_EQ(s.triggers, 0);
  EXPECT_TRUE(s.content.starts_with(" a <tool")) << s.content;
  EXPECT_TRUE(h.proc().TakeGrammarMaskTimes().empty());
}

TEST_F(OutputProcessorTest, LazyStopStringBeforeTheTriggerStops) {
  GenerationRequest r = Request(4, 30);
  r.constraint = CallConstraint();
  r.constraint_trigger = {"<tool_call>", false, false};
  r.stop = {"END"};
  OutputHarness h(*tok_, kContext);
  const Split s = RunLazy(h, r, Tok("ok END <tool_call>"));
  EXPECT_EQ(s.triggers, 0);
  EXPECT_EQ(s.content, "ok ");
  EXPECT_EQ(s.reason, FinishReason::kStop);
}

}  // namespace
}  // namespace brisk
