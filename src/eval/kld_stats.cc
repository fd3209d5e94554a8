#include "eval/kld_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace brisk::eval {

void LogSoftmax(const float* logits, int n, float* out) {
  const float mx = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  for (int i = 0; i < n; ++i) out[i] = static_cast<float>(logits[i] - lse);
}

PositionStats ComparePosition(const float* ref_lp, const float* test_lp, int n_vocab,
                              int32_t next_token) {
  PositionStats s;
  double kld = 0;
  int ref_top = 0, test_top = 0;
  for (int i = 0; i < n_vocab; ++i) {
    const double lr = ref_lp[i];
    kld += std::exp(lr) * (lr - static_cast<double>(test_lp[i]));
    if (ref_lp[i] > ref_lp[ref_top]) ref_top = i;
    if (test_lp[i] > test_lp[test_top]) test_top = i;
  }
  s.kld = std::max(0.0, kld);  // rounding can take an exact match a hair below zero
  s.same_top1 = ref_top == test_top;
  s.ref_logp = ref_lp[next_token];
  s.test_logp = test_lp[next_token];
  return s;
}

namespace {

MeanAndError MeanError(const std::vector<double>& v) {
  MeanAndError m;
  if (v.empty()) return m;
  double sum = 0, sum2 = 0;
  for (double x : v) {
    sum += x;
    sum2 += x * x;
  }
  const double n = static_cast<double>(v.size());
  m.mean = sum / n;
  if (v.size() > 1) {
    const double var = std::max(0.0, (sum2 / n - m.mean * m.mean) * n / (n - 1));
    m.stderr_ = std::sqrt(var / n);
  }
  return m;
}

// Nearest-rank percentile of sorted values, p in [0, 100].
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const size_t i = static_cast<size_t>(std::clamp(rank, 1.0, double(sorted.size()))) - 1;
  return sorted[i];
}

}  // namespace

KldSummary Summarize(const std::vector<PositionStats>& positions) {
  KldSummary s;
  s.positions = static_cast<int64_t>(positions.size());
  if (positions.empty()) return s;
  std::vector<double> kld, dp, ratio, top;
  double nll_ref = 0, nll_test = 0, dp2 = 0;
  for (const PositionStats& p : positions) {
    kld.push_back(p.kld);
    const double d = std::exp(p.test_logp) - std::exp(p.ref_logp);
    dp.push_back(d);
    dp2 += d * d;
    ratio.push_back(p.ref_logp - p.test_logp);
    top.push_back(p.same_top1 ? 1.0 : 0.0);
    nll_ref -= p.ref_logp;
    nll_test -= p.test_logp;
  }
  const double n = static_cast<double>(positions.size());
  s.ppl_ref = std::exp(nll_ref / n);
  s.ppl_test = std::exp(nll_test / n);
  s.ln_ppl_ratio = MeanError(ratio);
  s.kld = MeanError(kld);
  s.delta_p = MeanError(dp);
  s.rms_delta_p = std::sqrt(dp2 / n);
  s.same_top1 = MeanError(top);
  std::sort(kld.begin(), kld.end());
  s.kld_median = Percentile(kld, 50);
  s.kld_p90 = Percentile(kld, 90);
  s.kld_p99 = Percentile(kld, 99);
  s.kld_p999 = Percentile(kld, 99.9);
  s.kld_max = kld.back();
  std::sort(dp.begin(), dp.end());
  for (double p : {0.1, 1.0, 5.0, 10.0, 50.0, 90.0, 95.0, 99.0, 99.9})
    s.delta_p_percentiles.emplace_back(p, Percentile(dp, p));
  return s;
}

nlohmann::json SummaryJson(const KldSummary& s) {
  auto me = [](const MeanAndError& m) {
    return nlohmann::json{{"mean", m.mean}, {"stderr", m.stderr_}};
  };
  nlohmann::json pct = nlohmann::json::object();
  for (const auto& [p, v] : s.delta_p_percentiles) pct[fmt::format("{:g}", p)] = v;
  return {{"positions", s.positions},   {"ppl_reference", s.ppl_ref},
          {"ppl_test", s.ppl_test},     {"ln_ppl_ratio", me(s.ln_ppl_ratio)},
          {"kld", me(s.kld)},           {"kld_median", s.kld_median},
          {"kld_p90", s.kld_p90},       {"kld_p99", s.kld_p99},
          {"kld_p99_9", s.kld_p999},    {"kld_max", s.kld_max},
          {"delta_p", me(s.delta_p)},   {"rms_delta_p", s.rms_delta_p},
          {"delta_p_percentiles", pct}, {"same_top1", me(s.same_top1)}};
}

std::string SummaryMarkdown(const KldSummary& s) {
  std::string md = "| statistic | value |\n|---|---|\n";
  auto row = [&md](std::string_view name, const std::string& v) {
    md += fmt::format("| {} | {} |\n", name, v);
  };
  row("scored positions", fmt::format("{}", s.positions));
  row("PPL(reference)", fmt::format("{:.4f}", s.ppl_ref));
  row("PPL(test)", fmt::format("{:.4f}", s.ppl_test));
  row("ln(PPL(test)/PPL(reference))",
      fmt::format("{:.6f} ± {:.6f}", s.ln_ppl_ratio.mean, s.ln_ppl_ratio.stderr_));
  row("mean KLD", fmt::format("{:.6f} ± {:.6f}", s.kld.mean, s.kld.stderr_));
  row("median KLD", fmt::format("{:.6f}", s.kld_median));
  row("90% KLD", fmt::format("{:.6f}", s.kld_p90));
  row("99% KLD", fmt::format("{:.6f}", s.kld_p99));
  row("99.9% KLD", fmt::format("{:.6f}", s.kld_p999));
  row("max KLD", fmt::format("{:.6f}", s.kld_max));
  row("same top-1",
      fmt::format("{:.3f} ± {:.3f} %", 100 * s.same_top1.mean, 100 * s.same_top1.stderr_));
  row("mean Δp", fmt::format("{:.4f} ± {:.4f} %", 100 * s.delta_p.mean, 100 * s.delta_p.stderr_));
  row("RMS Δp", fmt::format("{:.4f} %", 100 * s.rms_delta_p));
  for (const auto& [p, v] : s.delta_p_percentiles)
    row(fmt::format("{:g}% Δp", p), fmt::format("{:.4f} %", 100 * v));
  return md;
}

void PackLogProbs(const float* lp, int n, float* min, float* scale, uint16_t* q) {
  float lo = 0, hi = kMinStoredLogProb;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, lp[i]);
    hi = std::max(hi, lp[i]);
  }
  lo = std::max(lo, kMinStoredLogProb);
  hi = std::max(hi, lo);
  const float step = hi > lo ? (hi - lo) / 65535.f : 1.f;
  for (int i = 0; i < n; ++i) {
    const float v = std::round((std::max(lp[i], lo) - lo) / step);
    q[i] = static_cast<uint16_t>(std::clamp(v, 0.f, 65535.f));
  }
  *min = lo;
  *scale = step;
}

void UnpackLogProbs(float min, float scale, const uint16_t* q, int n, float* lp) {
  for (int i = 0; i < n; ++i) lp[i] = min + scale * static_cast<float>(q[i]);
  LogSoftmax(lp, n, lp);
}

}  // namespace brisk::eval
