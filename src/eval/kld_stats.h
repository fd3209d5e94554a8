// The distribution check of `brisk eval kld`: how far a model configuration's
// next-token distributions are from a reference configuration's on the same
// text. Per scored position: KL(reference || test), whether the two agree on
// the most likely token, and both log-probabilities of the token that really
// follows. Summaries are the ones llama.cpp's `llama-perplexity
// --kl-divergence` prints (so the two can be set side by side): perplexity of
// each side and their log ratio, KLD mean / median / high percentiles, Δp (the
// test's probability of the real next token minus the reference's)
// percentiles and RMS, and the same-top-1 rate, each mean with its standard
// error.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace brisk::eval {

// log softmax(logits) of one row, accumulated in double.
void LogSoftmax(const float* logits, int n, float* out);

// One scored position.
struct PositionStats {
  double kld = 0;          // KL(reference || test), nats
  bool same_top1 = false;  // both argmax on the same token
  double ref_logp = 0;     // log p_reference(next token)
  double test_logp = 0;    // log p_test(next token)
};

// `ref_lp` and `test_lp` are log-probabilities (log softmax) over the vocab.
PositionStats ComparePosition(const float* ref_lp, const float* test_lp, int n_vocab,
                              int32_t next_token);

struct MeanAndError {
  double mean = 0;
  double stderr_ = 0;  // standard error of the mean
};

struct KldSummary {
  int64_t positions = 0;
  double ppl_ref = 0, ppl_test = 0;
  MeanAndError ln_ppl_ratio;  // mean of ln p_ref(tok) - ln p_test(tok) = ln(PPL(test)/PPL(ref))
  MeanAndError kld;
  double kld_median = 0, kld_p90 = 0, kld_p99 = 0, kld_p999 = 0, kld_max = 0;
  MeanAndError delta_p;  // p_test(tok) - p_ref(tok)
  double rms_delta_p = 0;
  // Δp percentiles: 0.1, 1, 5, 10, 50, 90, 95, 99, 99.9 (the tails show the
  // positions where the test configuration lost or gained most).
  std::vector<std::pair<double, double>> delta_p_percentiles;
  MeanAndError same_top1;  // rate in [0, 1]
};

// Summary of every scored position. Percentiles are nearest-rank on the
// sorted values.
KldSummary Summarize(const std::vector<PositionStats>& positions);

nlohmann::json SummaryJson(const KldSummary& s);
// A markdown table, one row per statistic.
std::string SummaryMarkdown(const KldSummary& s);

// Reference log-probs are stored as 16-bit steps between the row's minimum
// (clamped to kMinStoredLogProb) and its maximum: lp ~= min + q * scale.
// The step is at most (max - min) / 65535, below 1e-3 nats for any row.
inline constexpr float kMinStoredLogProb = -64.f;
void PackLogProbs(const float* lp, int n, float* min, float* scale, uint16_t* q);
// Unpacks and renormalizes (the steps' rounding leaves the sum a little off 1).
void UnpackLogProbs(float min, float scale, const uint16_t* q, int n, float* lp);

}  // namespace brisk::eval
