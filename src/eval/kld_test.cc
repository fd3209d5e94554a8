#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "eval/kld_base.h"
#include "eval/kld_run.h"
#include "eval/kld_stats.h"
#include "model/model.h"
#include "util/test_support.h"

namespace brisk::eval {
namespace {

std::vector<float> RandomLogits(std::mt19937& rng, int n, float spread) {
  std::normal_distribution<float> d(0, spread);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<float> LogProbs(const std::vector<float>& logits) {
  std::vector<float> lp(logits.size());
  LogSoftmax(logits.data(), static_cast<int>(logits.size()), lp.data());
  return lp;
}

TEST(KldStatsTest, LogSoftmaxSumsToOneAndKeepsOrder) {
  std::mt19937 rng(1);
  auto logits = RandomLogits(rng, 1000, 5);
  auto lp = LogProbs(logits);
  double sum = 0;
  for (float x : lp) sum += std::exp(double(x));
  EXPECT_NEAR(sum, 1.0, 1e-5);
  EXPECT_EQ(std::max_element(lp.begin(), lp.end()) - lp.begin(),
            std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST(KldStatsTest, ComparePositionMatchesTheDefinition) {
  // Two-token distributions: KL(p || q) = sum p log(p / q) by hand.
  const float ref[2] = {std::log(0.75f), std::log(0.25f)};
  const float test[2] = {std::log(0.4f), std::log(0.6f)};
  PositionStats s = ComparePosition(ref, test, 2, 1);
  EXPECT_NEAR(s.kld, 0.75 * std::log(0.75 / 0.4) + 0.25 * std::log(0.25 / 0.6), 1e-6);
  EXPECT_FALSE(s.same_top1);  // token 0 vs token 1
  EXPECT_NEAR(s.ref_logp, std::log(0.25), 1e-6);
  EXPECT_NEAR(s.test_logp, std::log(0.6), 1e-6);
  // Identical distributions: zero divergence, same top token.
  PositionStats same = ComparePosition(ref, ref, 2, 0);
  EXPECT_EQ(same.kld, 0.0);
  EXPECT_TRUE(same.same_top1);
}

TEST(KldStatsTest, SummaryStatistics) {
  std::vector<PositionStats> v;
  for (int i = 0; i < 100; ++i) {
    PositionStats p;
    p.kld = i / 100.0;             // 0.00 .. 0.99
    p.same_top1 = i % 4 != 0;      // 75%
    p.ref_logp = std::log(0.5);    // PPL 2
    p.test_logp = std::log(0.25);  // PPL 4
    v.push_back(p);
  }
  KldSummary s = Summarize(v);
  EXPECT_EQ(s.positions, 100);
  EXPECT_NEAR(s.kld.mean, 0.495, 1e-12);
  EXPECT_NEAR(s.kld_median, 0.49, 1e-12);  // nearest rank: the 50th of 100
  EXPECT_NEAR(s.kld_p99, 0.98, 1e-12);
  EXPECT_NEAR(s.kld_max, 0.99, 1e-12);
  EXPECT_NEAR(s.same_top1.mean, 0.75, 1e-12);
  EXPECT_NEAR(s.ppl_ref, 2.0, 1e-9);
  EXPECT_NEAR(s.ppl_test, 4.0, 1e-9);
  EXPECT_NEAR(s.ln_ppl_ratio.mean, std::log(2.0), 1e-9);
  EXPECT_NEAR(s.delta_p.mean, -0.25, 1e-12);
  EXPECT_NEAR(s.rms_delta_p, 0.25, 1e-12);
  EXPECT_GT(s.kld.stderr_, 0.0);
  const std::string md = SummaryMarkdown(s);
  EXPECT_NE(md.find("| mean KLD | 0.495000"), std::string::npos) << md;
  EXPECT_EQ(SummaryJson(s)["same_top1"]["mean"], 0.75);
}

TEST(KldStatsTest, PackedLogProbsStayWithinOneStep) {
  std::mt19937 rng(2);
  for (float spread : {1.f, 5.f, 20.f}) {
    auto lp = LogProbs(RandomLogits(rng, 4096, spread));
    std::vector<uint16_t> q(lp.size());
    float min = 0, step = 0;
    PackLogProbs(lp.data(), static_cast<int>(lp.size()), &min, &step, q.data());
    std::vector<float> back(lp.size());
    UnpackLogProbs(min, step, q.data(), static_cast<int>(q.size()), back.data());
    EXPECT_LT(step, 1e-3f);
    for (size_t i = 0; i < lp.size(); ++i) {
      if (lp[i] < kMinStoredLogProb) continue;  // clamped: never a likely token
      EXPECT_NEAR(back[i], lp[i], 2 * step) << i;
    }
    // The stored distribution is a faithful reference: its KLD to the
    // original is far below what any quantization measured here shows.
    EXPECT_LT(ComparePosition(back.data(), lp.data(), static_cast<int>(lp.size()), 0).kld, 1e-6);
  }
}

TEST(KldBaseTest, RoundTripAndCorruptFiles) {
  const std::string path = (std::filesystem::temp_directory_path() / "kld_base_test.bin").string();
  constexpr int kVocab = 300;
  std::vector<int32_t> tokens(3 * 32);
  std::iota(tokens.begin(), tokens.end(), 0);
  auto chunks = MakeChunks(tokens, 32, 0, 7);
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  EXPECT_EQ(chunks->n_chunks, 3);
  EXPECT_EQ(chunks->scored(), 3 * 15);
  KldBaseHeader h{kVocab, R"({"model":"m"})", *chunks};
  std::mt19937 rng(3);
  std::vector<std::vector<float>> rows;
  {
    auto w = KldBaseWriter::Create(path, h);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (int64_t r = 0; r < h.chunks.scored(); ++r) {
      rows.push_back(LogProbs(RandomLogits(rng, kVocab, 3)));
      ASSERT_TRUE((*w)->Append(rows.back().data()).ok());
    }
    EXPECT_FALSE(std::filesystem::exists(path));  // only the .tmp until Finish
    ASSERT_TRUE((*w)->Finish().ok());
  }
  {
    auto r = KldBaseReader::Open(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)->header().vocab, kVocab);
    EXPECT_EQ((*r)->header().description, h.description);
    EXPECT_EQ((*r)->header().chunks.tokens, h.chunks.tokens);
    EXPECT_EQ((*r)->header().chunks.bos, 7);
    std::vector<float> lp(kVocab);
    for (const auto& row : rows) {
      ASSERT_TRUE((*r)->Next(lp.data()).ok());
      for (int i = 0; i < kVocab; ++i) EXPECT_NEAR(lp[i], row[i], 1e-3f);
    }
    EXPECT_FALSE((*r)->Next(lp.data()).ok());
  }
  // A truncated base is refused with what is wrong, before any row is read.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
  auto truncated = KldBaseReader::Open(path);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos);
  { std::ofstream(path, std::ios::binary) << "GGUF not a base at all"; }
  auto other = KldBaseReader::Open(path);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("not a brisk eval kld base"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(KldRunTest, ChunksNeedOneWholeChunk) {
  EXPECT_FALSE(MakeChunks(std::vector<int32_t>(31), 32, 0, std::nullopt).ok());
  EXPECT_FALSE(MakeChunks(std::vector<int32_t>(100), 8, 0, std::nullopt).ok());
  auto c = MakeChunks(std::vector<int32_t>(100), 32, 2, std::nullopt);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->n_chunks, 2);
  EXPECT_EQ(c->tokens.size(), 64u);
}

// The scored rows are exactly the logits a single forward pass over the
// whole chunk gives at those positions (BOS in front), and the model scored
// against itself diverges by nothing.
TEST(KldRunTest, ScoredRowsAreTheChunkForwardsLogits) {
  const std::string model_path = std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(model_path))
    BRISK_SKIP_OR_FAIL_MISSING("default model not installed");
  auto model = Model::Load(model_path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Model& m = **model;
  const int vocab = m.config().vocab;
  std::mt19937 rng(4);
  std::vector<int32_t> tokens(2 * 80 + 5);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % 2000) + 100;
  auto chunks = MakeChunks(tokens, 80, 0, 1);
  ASSERT_TRUE(chunks.ok());
  ThreadPool pool(2);
  std::vector<std::vector<float>> rows;
  std::vector<int> chunk_done;
  ASSERT_TRUE(ScoreChunks(
                  m, pool, *chunks,
                  [&](int c, int j, const float* logits) {
                    EXPECT_EQ(j, chunks->first() + static_cast<int>(rows.size()) % 39);
                    EXPECT_EQ(c, static_cast<int>(rows.size()) / 39);
                    rows.emplace_back(logits, logits + vocab);
                    return Status::Ok();
                  },
                  [&](int c) { chunk_done.push_back(c); })
                  .ok());
  ASSERT_EQ(rows.size(), 2u * 39);
  EXPECT_EQ(chunk_done, (std::vector<int>{0, 1}));
  // Chunk 1 in one forward pass, BOS first.
  std::vector<int32_t> chunk1(tokens.begin() + 80, tokens.begin() + 160);
  chunk1[0] = 1;
  KvCache kv(m.kv_shape(16), 5);
  std::vector<int32_t> blocks = {0, 1, 2, 3, 4};
  Batch b;
  b.tokens.reserve(chunk1.size());  // (GCC 12 warns of a zero-size memmove otherwise)
  b.Add(chunk1, 0, blocks, BatchSequence::Logits::kAll);
  std::vector<float> all;
  ASSERT_TRUE(m.Forward(b, kv, pool, &all).ok());
  float worst = 0;
  for (int j = 40; j < 79; ++j)
    for (int i = 0; i < vocab; ++i)
      worst = std::max(worst, std::fabs(rows[39 + j - 40][i] - all[size_t(j) * vocab + i]));
  EXPECT_LT(worst, 1e-3f);
  // Self-comparison.
  std::vector<float> lp(vocab);
  LogSoftmax(rows[0].data(), vocab, lp.data());
  EXPECT_EQ(ComparePosition(lp.data(), lp.data(), vocab, chunks->next_token(0, 40)).kld, 0.0);
}

}  // namespace
}  // namespace brisk::eval
