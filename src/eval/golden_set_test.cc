#include "eval/golden_set.h"

#include <gtest/gtest.h>

#include "eval/golden_eval.h"

namespace brisk::eval {
namespace {

std::vector<GoldenCase> MustParse(std::string_view text) {
  auto r = ParseGoldenSet(text, "set.jsonl");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<GoldenCase>{};
}

std::string ErrorOf(std::string_view text) {
  auto r = ParseGoldenSet(text, "set.jsonl");
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : r.status().message();
}

TEST(GoldenSet, ParsesCasesWithDefaults) {
  auto cases = MustParse(
      R"({"id": "fr", "prompt": "The capital of France is", "max_tokens": 8, "check": {"contains_any": ["Paris"]}}

{"messages": [{"role": "user", "content": "2+2?"}], "seed": 3, "check": {"regex": "\\b4\\b"}})");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].id, "fr");
  EXPECT_FALSE(cases[0].chat);
  EXPECT_EQ(cases[0].body["max_tokens"], 8);
  EXPECT_EQ(cases[0].body["temperature"], 0);
  EXPECT_FALSE(cases[0].body.contains("check"));
  EXPECT_EQ(cases[1].id, "3");  // its line
  EXPECT_TRUE(cases[1].chat);
  EXPECT_EQ(cases[1].body["max_tokens"], 64);
  EXPECT_EQ(cases[1].body["seed"], 3);
}

TEST(GoldenSet, RefusesWhatItCannotRun) {
  EXPECT_EQ(ErrorOf("{\"prompt\": \"x\"}"), "set.jsonl:1: a case needs a \"check\"");
  EXPECT_NE(ErrorOf(R"({"prompt": "x", "check": {"contains": "a", "regex": "b"}})")
                .find("exactly one kind"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"prompt": "x", "check": {"smells_like": "a"}})").find("unknown check"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"prompt": "x", "check": {"regex": "("}})").find("check.regex"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"check": {"json": true}})").find("\"messages\" or \"prompt\""),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"prompt": "x", "stream": true, "check": {"json": true}})").find("stream"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{\"id\": 1, \"prompt\": \"x\", \"check\": {\"json\": true}}\n"
                    "{\"id\": 1, \"prompt\": \"y\", \"check\": {\"json\": true}}")
                .find("used twice"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(R"({"prompt": "x", "check": {"json_schema": {"$ref": "#"}}})").find("not a schema"),
      std::string::npos);
  EXPECT_NE(ErrorOf("not json").find("set.jsonl:1"), std::string::npos);
  EXPECT_NE(ErrorOf("\n\n").find("no cases"), std::string::npos);
}

TEST(GoldenSet, Checks) {
  auto check = [](std::string_view json_check, std::string_view answer) {
    auto cases =
        MustParse(std::string(R"({"prompt": "p", "check": )") + std::string(json_check) + "}");
    return cases.empty() ? std::string("no case") : CheckAnswer(cases[0].check, answer);
  };
  EXPECT_EQ(check(R"({"exact": "Paris"})", "  Paris\n"), "");
  EXPECT_NE(check(R"({"exact": "Paris"})", "Paris."), "");
  EXPECT_EQ(check(R"({"exact": "paris", "ignore_case": true})", "PARIS"), "");
  EXPECT_EQ(check(R"({"contains": ["a", "b"]})", "xaxbx"), "");
  EXPECT_EQ(check(R"({"contains": ["a", "c"]})", "xaxbx"), "missing 'c'");
  EXPECT_EQ(check(R"({"contains_any": ["Rome", "Roma"]})", "It is Roma."), "");
  EXPECT_NE(check(R"({"contains_any": ["Rome"]})", "rome"), "");
  EXPECT_EQ(check(R"({"contains_any": ["Rome"], "ignore_case": true})", "rome"), "");
  EXPECT_EQ(check(R"({"regex": "^\\s*\\d+\\s*$"})", " 42 "), "");
  EXPECT_EQ(check(R"({"regex": "^\\d+$"})", "4 2"), "no match");
  EXPECT_EQ(check(R"({"json": true})", R"({"a": [1]})"), "");
  EXPECT_NE(check(R"({"json": true})", "{a}"), "");
  // (JSONL: one line per case.)
  const char* schema =
      R"({"json_schema": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}})";
  EXPECT_EQ(check(schema, R"({"n": 3})"), "");
  EXPECT_NE(check(schema, R"({"n": "3"})").find("schema_mismatch"), std::string::npos);
}

TEST(GoldenGate, ParsesAndApplies) {
  auto g = ParseGate("min_pass_rate: 0.5\nmin_pass_rate_lower_bound: 0.6\n", "g.yaml");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  std::vector<CaseResult> cases(10);
  for (int i = 0; i < 10; ++i) {
    cases[i].passed = i < 8;
    cases[i].latency_ms = 10.0 * (i + 1);
  }
  EvalReport r = Summarize(cases, *g);
  EXPECT_EQ(r.passed, 8);
  EXPECT_DOUBLE_EQ(r.pass_rate, 0.8);
  EXPECT_EQ(r.latency_p50_ms, 50);
  EXPECT_EQ(r.latency_p95_ms, 100);
  ASSERT_EQ(r.gate.size(), 2u);
  EXPECT_TRUE(r.gate[0].ok);
  EXPECT_FALSE(r.gate[1].ok);  // 8/10 is not shown to be >= 60% with 95% confidence
  EXPECT_FALSE(r.gate_passed);
  EXPECT_EQ(ReportJson(r)["gate_passed"], false);
  EXPECT_NE(ReportMarkdown(r).find("Gate: **failed**"), std::string::npos);
  EXPECT_TRUE(Summarize(cases, GateThresholds{}).gate_passed);
  auto latency = ParseGate("max_latency_p95_ms: 99\n", "g.yaml");
  ASSERT_TRUE(latency.ok());
  EXPECT_FALSE(Summarize(cases, *latency).gate_passed);
  EXPECT_FALSE(ParseGate("min_pass_rate: 2\n", "g.yaml").ok());
  EXPECT_FALSE(ParseGate("min_pass: 0.5\n", "g.yaml").ok());
  EXPECT_TRUE(ParseGate("", "g.yaml").ok());
}

}  // namespace
}  // namespace brisk::eval
