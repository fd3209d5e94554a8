#include "loadgen/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace brisk::loadgen {
namespace {

TEST(Percentile, MatchesNumpyLinear) {
  // numpy.percentile([1, 2, 3, 4], p): rank (n - 1) * p / 100, interpolated.
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);   // rank 1.5
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 3.7);   // rank 2.7
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 3.97);  // rank 2.97
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4.0);
  // numpy.percentile([15, 20, 35, 40, 50], 40) == 29.0 (rank 1.6: 20 + 0.6 * 15)
  const std::vector<double> w = {15, 20, 35, 40, 50};
  EXPECT_DOUBLE_EQ(Percentile(w, 40), 29.0);
  EXPECT_DOUBLE_EQ(Percentile(w, 95), 48.0);  // rank 3.8: 40 + 0.8 * 10
  const std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(Percentile(one, 99), 7.0);
}

TEST(Summarize, MeanStdPercentilesMax) {
  Distribution d = Summarize({40, 10, 30, 20});  // unsorted on purpose
  EXPECT_EQ(d.count, 4);
  EXPECT_DOUBLE_EQ(d.mean, 25);
  EXPECT_DOUBLE_EQ(d.std, std::sqrt(125.0));  // population std, as numpy.std
  EXPECT_DOUBLE_EQ(d.min, 10);
  EXPECT_DOUBLE_EQ(d.max, 40);
  EXPECT_DOUBLE_EQ(d.p50, 25);
  EXPECT_DOUBLE_EQ(d.p90, 37);    // rank 2.7
  EXPECT_DOUBLE_EQ(d.p95, 38.5);  // rank 2.85
  EXPECT_DOUBLE_EQ(d.p99, 39.7);  // rank 2.97
  Distribution empty = Summarize({});
  EXPECT_EQ(empty.count, 0);
  EXPECT_EQ(empty.p99, 0);
}

RequestRecord Ok(double ttft_s, double e2e_s, int64_t out, int64_t prompt,
                 std::vector<double> itl = {}) {
  RequestRecord r;
  r.status = RequestStatus::kOk;
  r.ttft_s = ttft_s;
  r.e2e_s = e2e_s;
  r.output_tokens = out;
  r.prompt_tokens = prompt;
  r.itl_s = std::move(itl);
  return r;
}

TEST(Tpot, ExcludesFirstTokenAndOneTokenOutputs) {
  // (E2E - TTFT) / (output tokens - 1) = (1.0 - 0.1) / 9
  EXPECT_DOUBLE_EQ(*Tpot(Ok(0.1, 1.0, 10, 5)), 0.1);
  EXPECT_DOUBLE_EQ(*Tpot(Ok(0.5, 0.75, 2, 5)), 0.25);
  EXPECT_FALSE(Tpot(Ok(0.1, 0.1, 1, 5)).has_value());
  RequestRecord failed = Ok(0.1, 1.0, 10, 5);
  failed.status = RequestStatus::kError;
  EXPECT_FALSE(Tpot(failed).has_value());
}

std::vector<RequestRecord> Mixed() {
  std::vector<RequestRecord> rs;
  rs.push_back(Ok(0.1, 1.0, 10, 50, {0.05, 0.15}));  // TPOT 100 ms
  rs.push_back(Ok(0.2, 0.2, 1, 30));                 // 1 token: no TPOT
  rs.push_back(Ok(0.3, 0.7, 5, 20, {0.1}));          // TPOT 100 ms
  RequestRecord err;
  err.status = RequestStatus::kError;
  err.prompt_tokens = 1000;  // not counted: failed
  err.output_tokens = 1000;
  rs.push_back(err);
  RequestRecord rejected;
  rejected.status = RequestStatus::kRejected;
  rs.push_back(rejected);
  rs.push_back(RequestRecord{});  // cancelled
  return rs;
}

TEST(ComputeMetrics, CountsThroughputAndDistributions) {
  const auto rs = Mixed();
  BenchMetrics m = ComputeMetrics(rs, /*duration_s=*/2.0, Slo{});
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.errors, 1);
  EXPECT_EQ(m.rejected, 1);
  EXPECT_EQ(m.cancelled, 1);
  EXPECT_EQ(m.total_input_tokens, 100);
  EXPECT_EQ(m.total_output_tokens, 16);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(m.output_throughput, 8.0);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 58.0);
  EXPECT_FALSE(m.has_slo);
  EXPECT_EQ(m.ttft_ms.count, 3);
  EXPECT_NEAR(m.ttft_ms.mean, 200, 1e-9);
  EXPECT_NEAR(m.ttft_ms.p50, 200, 1e-9);
  EXPECT_NEAR(m.ttft_ms.max, 300, 1e-9);
  EXPECT_EQ(m.tpot_ms.count, 2);  // the 1-token output has none
  EXPECT_NEAR(m.tpot_ms.mean, 100, 1e-9);
  // ITL pooled over requests: {50, 150, 100}
  EXPECT_EQ(m.itl_ms.count, 3);
  EXPECT_NEAR(m.itl_ms.mean, 100, 1e-9);
  EXPECT_NEAR(m.itl_ms.p50, 100, 1e-9);
  EXPECT_NEAR(m.itl_ms.p99, 149, 1e-9);  // rank 1.98: 100 + 0.98 * 50
  EXPECT_NEAR(m.e2e_ms.mean, (1000 + 200 + 700) / 3.0, 1e-9);
}

TEST(ComputeMetrics, GoodputCountsRequestsMeetingEveryObjective) {
  const auto rs = Mixed();
  Slo ttft;
  ttft.ttft_s = 0.2;  // requests 0 and 1 (equal counts as met), not 2
  BenchMetrics m = ComputeMetrics(rs, 2.0, ttft);
  EXPECT_TRUE(m.has_slo);
  EXPECT_EQ(m.good_requests, 2);
  EXPECT_DOUBLE_EQ(m.goodput, 1.0);

  Slo tpot;
  tpot.tpot_s = 0.05;  // both multi-token requests have 100 ms; a 1-token output counts as 0
  m = ComputeMetrics(rs, 2.0, tpot);
  EXPECT_EQ(m.good_requests, 1);
  EXPECT_DOUBLE_EQ(m.goodput, 0.5);

  Slo all;
  all.ttft_s = 0.35;
  all.tpot_s = 0.1;
  all.e2e_s = 0.8;  // request 0 has e2e 1.0
  m = ComputeMetrics(rs, 2.0, all);
  EXPECT_EQ(m.good_requests, 2);
}

TEST(ParseSlo, UnitsAndErrors) {
  auto slo = ParseSlo("ttft=650ms,tpot=50ms,e2e=2s");
  ASSERT_TRUE(slo.ok()) << slo.status().ToString();
  EXPECT_DOUBLE_EQ(*slo->ttft_s, 0.65);
  EXPECT_DOUBLE_EQ(*slo->tpot_s, 0.05);
  EXPECT_DOUBLE_EQ(*slo->e2e_s, 2.0);
  slo = ParseSlo(" tpot = 200us ");
  ASSERT_TRUE(slo.ok());
  EXPECT_FALSE(slo->ttft_s.has_value());
  EXPECT_NEAR(*slo->tpot_s, 200e-6, 1e-15);
  EXPECT_DOUBLE_EQ(*ParseSlo("ttft=650")->ttft_s, 0.65);  // bare number: ms
  EXPECT_FALSE(ParseSlo("foo=1ms").ok());
  EXPECT_FALSE(ParseSlo("ttft").ok());
  EXPECT_FALSE(ParseSlo("ttft=abc").ok());
  EXPECT_FALSE(ParseSlo("ttft=5h").ok());
  EXPECT_FALSE(ParseSlo("ttft=-5ms").ok());
}

}  // namespace
}  // namespace brisk::loadgen
