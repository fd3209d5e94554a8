// Engine loop on the real default model: greedy outputs, seeds, stop
// conditions, cancellation and block accounting.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

namespace brisk {
namespace {

std::string ModelPath() {
  return std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(ModelPath())) return;
    auto m = LlamaModel::Load(ModelPath());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m).release();
    auto t = Tokenizer::FromGguf(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tok_ = std::move(*t).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete model_;
  }
  void SetUp() override {
    if (!model_) GTEST_SKIP() << "default model not installed";
  }
  GenerationRequest Greedy(const std::string& text, int max_tokens) {
    GenerationRequest r;
    r.prompt = tok_->Encode(text, true, false);
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    return r;
  }
  // Runs all requests to completion; returns seq id -> (tokens, text, reason).
  struct Result {
    std::vector<int32_t> tokens;
    std::string text;
    FinishReason reason = FinishReason::kNone;
  };
  std::map<int64_t, Result> RunAll(Engine& e) {
    std::map<int64_t, Result> res;
    std::vector<SequenceOutput> outs;
    while (e.HasWork()) {
      outs.clear();
      EXPECT_TRUE(e.Step(&outs).ok());
      for (auto& o : outs) {
        auto& r = res[o.seq_id];
        r.tokens.insert(r.tokens.end(), o.new_tokens.begin(), o.new_tokens.end());
        r.text += o.text;
        if (o.finished) r.reason = o.reason;
      }
    }
    return res;
  }
  static LlamaModel* model_;
  static Tokenizer* tok_;
};
LlamaModel* EngineTest::model_ = nullptr;
Tokenizer* EngineTest::tok_ = nullptr;

TEST_F(EngineTest, GreedyCompletesKnownFact) {
  Engine e(*model_, *tok_, {});
  auto id = e.Add(Greedy("The capital of France is", 4));
  ASSERT_TRUE(id.ok());
  auto res = RunAll(e);
  EXPECT_EQ(res[*id].tokens.size(), 4u);
  EXPECT_EQ(res[*id].reason, FinishReason::kLength);
  EXPECT_NE(res[*id].text.find("Paris"), std::string::npos) << res[*id].text;
  EXPECT_EQ(e.block_pool().num_used(), 0);
}

// Continuous batching must not change greedy outputs: 8 concurrent requests
// equal the same requests run one at a time.
TEST_F(EngineTest, ConcurrentGreedyEqualsSequential) {
  const std::vector<std::string> prompts = {"Once upon a time",
                                            "def fibonacci(n):",
                                            "The three primary colors are",
                                            "Water boils at",
                                            "In 1969, astronauts",
                                            "A haiku about autumn:\n",
                                            "List of fruits: apple,",
                                            "Q: What is the largest planet?\nA:"};
  std::vector<std::vector<int32_t>> seq_out;
  for (const auto& p : prompts) {
    Engine e(*model_, *tok_, {});
    auto id = e.Add(Greedy(p, 16));
    ASSERT_TRUE(id.ok());
    seq_out.push_back(RunAll(e)[*id].tokens);
  }
  EngineOptions small;
  small.max_batch_tokens = 24;  // forces chunked prefill mixed with decodes
  Engine e(*model_, *tok_, small);
  std::vector<int64_t> ids;
  for (const auto& p : prompts) ids.push_back(*e.Add(Greedy(p, 16)));
  auto res = RunAll(e);
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(res[ids[i]].tokens, seq_out[i]) << "prompt: " << prompts[i];
  EXPECT_EQ(e.block_pool().num_used(), 0);
}

// A KV pool too small for all requests at once: newer sequences are
// preempted and recomputed; greedy outputs do not change and no block leaks.
TEST_F(EngineTest, PreemptionUnderKvPressureKeepsGreedyOutputs) {
  const std::vector<std::string> prompts = {
      "Once upon a time", "def fibonacci(n):", "The three primary colors are", "Water boils at"};
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : prompts) {
    Engine e(*model_, *tok_, {});
    auto id = *e.Add(Greedy(p, 40));
    alone.push_back(RunAll(e)[id].tokens);
  }
  EngineOptions tight;
  // 8 blocks of 16 tokens: each request needs 3-4 blocks, so 4 cannot run at once.
  tight.kv_budget_bytes = 8 * model_->kv_shape(16).BytesPerBlock();
  Engine e(*model_, *tok_, tight);
  ASSERT_EQ(e.block_pool().num_blocks(), 8);
  std::vector<int64_t> ids;
  for (const auto& p : prompts) ids.push_back(*e.Add(Greedy(p, 40)));
  auto res = RunAll(e);
  EXPECT_GT(e.num_preemptions(), 0);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(res[ids[i]].tokens, alone[i]) << prompts[i];
  EXPECT_EQ(e.block_pool().num_used(), 0);
}

TEST_F(EngineTest, SameSeedSameOutput) {
  auto run = [&](uint64_t seed) {
    Engine e(*model_, *tok_, {});
    GenerationRequest r = Greedy("Tell me a story:", 24);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    auto id = e.Add(std::move(r));
    return RunAll(e)[*id].tokens;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST_F(EngineTest, StopStringEndsGenerationWithoutEmittingIt) {
  Engine e(*model_, *tok_, {});
  GenerationRequest r = Greedy("The capital of France is", 32);
  r.stop = {"Paris"};
  auto id = e.Add(std::move(r));
  auto res = RunAll(e);
  EXPECT_EQ(res[*id].reason, FinishReason::kStop);
  EXPECT_EQ(res[*id].text.find("Paris"), std::string::npos);
}

TEST_F(EngineTest, StopTokenEndsGeneration) {
  GenerationRequest probe = Greedy("The capital of France is", 4);
  Engine e1(*model_, *tok_, {});
  auto id1 = *e1.Add(probe);
  auto first = RunAll(e1)[id1].tokens;
  ASSERT_GE(first.size(), 2u);
  Engine e2(*model_, *tok_, {});
  probe.stop_token_ids = {first[1]};
  auto id2 = *e2.Add(probe);
  auto res = RunAll(e2)[id2];
  EXPECT_EQ(res.reason, FinishReason::kStop);
  EXPECT_EQ(res.tokens.size(), 2u);  // the stop token is reported, its text is not emitted
}

TEST_F(EngineTest, CancelFreesBlocksWithinOneStep) {
  Engine e(*model_, *tok_, {});
  auto a = *e.Add(Greedy("Count to one hundred: 1, 2, 3,", 200));
  auto b = *e.Add(Greedy("The alphabet: A, B, C,", 8));
  std::vector<SequenceOutput> outs;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(e.Step(&outs).ok());
  EXPECT_GT(e.block_pool().num_used(), 0);
  e.Cancel(a);
  outs.clear();
  ASSERT_TRUE(e.Step(&outs).ok());
  bool saw_cancel = false;
  for (auto& o : outs)
    if (o.seq_id == a && o.finished) saw_cancel = o.reason == FinishReason::kCancelled;
  EXPECT_TRUE(saw_cancel);
  auto res = RunAll(e);
  EXPECT_EQ(res[b].reason, FinishReason::kLength);
  EXPECT_EQ(e.block_pool().num_used(), 0);
}

// Cancel() from another thread while the engine thread steps (the server's
// case: an HTTP thread sees the client go away).
TEST_F(EngineTest, CancelFromAnotherThread) {
  Engine e(*model_, *tok_, {});
  std::vector<int64_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(*e.Add(Greedy("Count slowly: one, two,", 64)));
  std::atomic<bool> go{false};
  std::thread canceller([&] {
    while (!go.load()) std::this_thread::yield();
    for (int64_t id : ids) e.Cancel(id);
  });
  std::map<int64_t, FinishReason> reason;
  std::vector<SequenceOutput> outs;
  int steps = 0;
  while (e.HasWork()) {
    outs.clear();
    ASSERT_TRUE(e.Step(&outs).ok());
    if (++steps == 2) go.store(true);
    for (auto& o : outs)
      if (o.finished) reason[o.seq_id] = o.reason;
  }
  canceller.join();
  EXPECT_EQ(reason.size(), ids.size());
  EXPECT_EQ(e.block_pool().num_used(), 0);
}

TEST_F(EngineTest, RejectsBadRequests) {
  Engine e(*model_, *tok_, {});
  GenerationRequest empty;
  EXPECT_EQ(e.Add(empty).status().code(), StatusCode::kInvalidArgument);
  GenerationRequest too_long = Greedy("hi", 1);
  too_long.max_tokens = static_cast<int>(e.context_limit());
  EXPECT_EQ(e.Add(too_long).status().code(), StatusCode::kOutOfRange);
  GenerationRequest bad_temp = Greedy("hi", 4);
  bad_temp.sampling.temperature = -1;
  EXPECT_EQ(e.Add(bad_temp).status().code(), StatusCode::kInvalidArgument);
  GenerationRequest bad_tok = Greedy("hi", 4);
  bad_tok.prompt.push_back(1 << 30);
  EXPECT_EQ(e.Add(bad_tok).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(e.HasWork());
}

}  // namespace
}  // namespace brisk
