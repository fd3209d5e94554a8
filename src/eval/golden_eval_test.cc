#include "eval/golden_eval.h"

#include <gtest/gtest.h>

namespace brisk::eval {
namespace {

std::vector<CaseResult> Cases(int passed, int n) {
  std::vector<CaseResult> cases(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    cases[static_cast<size_t>(i)].passed = i < passed;
    cases[static_cast<size_t>(i)].latency_ms = 10;
  }
  return cases;
}

KldSummary Kld(double kld, double same_top1, double ln_ppl_ratio) {
  KldSummary s;
  s.positions = 255;
  s.kld.mean = kld;
  s.same_top1.mean = same_top1;
  s.ln_ppl_ratio.mean = ln_ppl_ratio;
  return s;
}

TEST(GateFile, ReadsTheDistributionCheck) {
  auto g = ParseGate(
      "min_pass_rate_lower_bound: 0.87\nmax_kld: 0.05\nmin_same_top1: 0.85\n"
      "max_ln_ppl_ratio: 0.03\nkld_text: t.txt\nkld_ctx: 256\nkld_chunks: 2\n",
      "g.yaml");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(g->names_kld());
  EXPECT_EQ(*g->max_kld, 0.05);
  EXPECT_EQ(*g->min_same_top1, 0.85);
  EXPECT_EQ(*g->max_ln_ppl_ratio, 0.03);
  EXPECT_EQ(g->kld_text, "t.txt");
  EXPECT_EQ(g->kld_ctx, 256);
  EXPECT_EQ(g->kld_chunks, 2);
  // Defaults: the golden checks alone; the installed text, 6 chunks of 512.
  auto plain = ParseGate("min_pass_rate: 0.5\n", "g.yaml");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->names_kld());
  EXPECT_EQ(plain->kld_text, "");
  EXPECT_EQ(plain->kld_ctx, 512);
  EXPECT_EQ(plain->kld_chunks, 6);
  EXPECT_TRUE(ParseGate("min_same_top1: 0.9\n", "g.yaml")->names_kld());
  // Unknown keys and values out of range are errors, with the file and line.
  auto typo = ParseGate("max_kld: 0.05\nmax_kl: 0.05\n", "g.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("g.yaml:2"), std::string::npos) << typo.status().message();
  EXPECT_FALSE(ParseGate("min_same_top1: 1.5\n", "g.yaml").ok());
  EXPECT_FALSE(ParseGate("max_kld: -0.1\n", "g.yaml").ok());
  EXPECT_FALSE(ParseGate("max_kld: x\n", "g.yaml").ok());
  EXPECT_FALSE(ParseGate("kld_chunks: 0\n", "g.yaml").ok());
  EXPECT_FALSE(ParseGate("kld_ctx: 8\n", "g.yaml").ok());
  EXPECT_FALSE(ParseGate("kld_text: ''\n", "g.yaml").ok());
}

TEST(GateFile, TheReportPassesOnlyWhenBothChecksHold) {
  auto g = ParseGate("min_pass_rate: 0.5\nmax_kld: 0.05\nmin_same_top1: 0.85\n", "g.yaml");
  ASSERT_TRUE(g.ok());
  const nlohmann::json check = {{"kld", {{"mean", 0.03}}}, {"checked", true}};
  // Both hold.
  EvalReport r = Summarize(Cases(9, 10), *g);
  ApplyKldGate(*g, Kld(0.03, 0.9, 0.01), check, &r);
  ASSERT_EQ(r.gate.size(), 3u);
  EXPECT_EQ(r.gate[1].name, "max_kld");
  EXPECT_EQ(r.gate[2].name, "min_same_top1");
  EXPECT_TRUE(r.gate_passed);
  nlohmann::json j = ReportJson(r);
  EXPECT_EQ(j["kld"], check);
  EXPECT_EQ(j["gate"].size(), 3u);
  EXPECT_NE(ReportMarkdown(r).find("Distribution check"), std::string::npos);
  // The answers hold, the distribution does not (int4's numbers).
  r = Summarize(Cases(9, 10), *g);
  ApplyKldGate(*g, Kld(0.56, 0.60, 0.49), check, &r);
  EXPECT_FALSE(r.gate_passed);
  EXPECT_FALSE(r.gate[1].ok);
  EXPECT_FALSE(r.gate[2].ok);
  // The distribution holds, the answers do not.
  r = Summarize(Cases(2, 10), *g);
  ApplyKldGate(*g, Kld(0.01, 0.95, 0.0), check, &r);
  EXPECT_FALSE(r.gate_passed);
  EXPECT_TRUE(r.gate[1].ok && r.gate[2].ok);
  // A threshold the gate does not name is not applied.
  auto kld_only = ParseGate("max_ln_ppl_ratio: 0.02\n", "g.yaml");
  ASSERT_TRUE(kld_only.ok());
  r = Summarize(Cases(0, 10), *kld_only);
  EXPECT_TRUE(r.gate.empty());
  ApplyKldGate(*kld_only, Kld(0.9, 0.1, 0.03), check, &r);
  ASSERT_EQ(r.gate.size(), 1u);
  EXPECT_EQ(r.gate[0].name, "max_ln_ppl_ratio");
  EXPECT_FALSE(r.gate_passed);
  // A run without the check has no "kld" in its report; one that could not
  // run says why.
  EXPECT_FALSE(ReportJson(Summarize(Cases(9, 10), *g)).contains("kld"));
  r = Summarize(Cases(9, 10), *g);
  r.kld = {{"checked", false}, {"why", "native"}};
  EXPECT_NE(ReportMarkdown(r).find("not run (native)"), std::string::npos);
}

}  // namespace
}  // namespace brisk::eval
