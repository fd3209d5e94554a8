// Engine loop on the real default model: greedy outputs, seeds, stop
// conditions, cancellation and block accounting.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "engine/default_model_test_base.h"

namespace brisk {
namespace {

class EngineTest : public DefaultModelTest {
 protected:
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
        auto& r = res[o.request_id];
        r.tokens.insert(r.tokens.end(), o.new_tokens.begin(), o.new_tokens.end());
        r.text += o.text;
        if (o.finished) r.reason = o.reason;
      }
    }
    return res;
  }
};

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
  small.scheduler.max_batch_tokens = 24;  // forces chunked prefill mixed with decodes
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
    if (o.request_id == a && o.finished) saw_cancel = o.reason == FinishReason::kCancelled;
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
      if (o.finished) reason[o.request_id] = o.reason;
  }
  canceller.join();
  EXPECT_EQ(reason.size(), ids.size());
  EXPECT_EQ(e.block_pool().num_used(), 0);
}

// The scheduler issue's check: 32 concurrent greedy requests equal their
// outputs run one at a time, with a roomy KV pool and with one so small that
// preemption happens.
TEST_F(EngineTest, ThirtyTwoConcurrentEqualAloneWithAndWithoutPreemption) {
  std::vector<std::string> prompts;
  for (int i = 0; i < 32; ++i)
    prompts.push_back("Request " + std::to_string(i) + ": write " + std::to_string(i % 7 + 2) +
                      " words about " + (i % 2 ? "the sea" : "mountains") + ".");
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : prompts) {
    Engine e(*model_, *tok_, {});
    auto id = *e.Add(Greedy(p, 12));
    alone.push_back(RunAll(e)[id].tokens);
  }
  for (int64_t blocks : {int64_t{0}, int64_t{24}}) {
    EngineOptions o;
    o.scheduler.max_batch_tokens = 64;
    o.scheduler.prefix_cache = false;
    if (blocks) o.kv_budget_bytes = blocks * model_->kv_shape(16).BytesPerBlock();
    Engine e(*model_, *tok_, o);
    std::vector<int64_t> ids;
    for (const auto& p : prompts) ids.push_back(*e.Add(Greedy(p, 12)));
    auto res = RunAll(e);
    if (blocks) {
      EXPECT_GT(e.num_preemptions(), 0);
    }
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_EQ(res[ids[i]].tokens, alone[i]) << prompts[i] << " blocks=" << blocks;
    EXPECT_EQ(e.block_pool().num_used(), 0);
  }
}

// n > 1 forks after the prompt: greedy samples are identical, sampled ones
// differ, and the shared blocks are released exactly once.
TEST_F(EngineTest, NSamplesShareThePrompt) {
  Engine e(*model_, *tok_, {});
  GenerationRequest r = Greedy("Write a short poem about the moon:", 10);
  r.n = 3;
  auto id = *e.Add(r);
  std::map<int, std::vector<int32_t>> by_index;
  std::vector<SequenceOutput> outs;
  int finished = 0;
  while (e.HasWork()) {
    outs.clear();
    ASSERT_TRUE(e.Step(&outs).ok());
    for (auto& o : outs) {
      EXPECT_EQ(o.request_id, id);
      by_index[o.index].insert(by_index[o.index].end(), o.new_tokens.begin(), o.new_tokens.end());
      finished += o.finished;
    }
  }
  EXPECT_EQ(finished, 3);
  ASSERT_EQ(by_index.size(), 3u);
  EXPECT_EQ(by_index[0], by_index[1]);
  EXPECT_EQ(by_index[0], by_index[2]);
  EXPECT_EQ(e.block_pool().num_used(), 0);

  GenerationRequest t = Greedy("Write a short poem about the moon:", 16);
  t.sampling.temperature = 1.2f;
  t.sampling.seed = 7;
  t.n = 4;
  auto tid = *e.Add(t);
  std::map<int, std::vector<int32_t>> samples;
  while (e.HasWork()) {
    outs.clear();
    ASSERT_TRUE(e.Step(&outs).ok());
    for (auto& o : outs)
      if (o.request_id == tid)
        samples[o.index].insert(samples[o.index].end(), o.new_tokens.begin(), o.new_tokens.end());
  }
  ASSERT_EQ(samples.size(), 4u);
  std::set<std::vector<int32_t>> distinct;
  for (auto& [i, v] : samples) distinct.insert(v);
  EXPECT_GT(distinct.size(), 1u);
  EXPECT_EQ(e.block_pool().num_used(), 0);
}

// Prefix caching must not change outputs: prompts sharing 0, 1, a partial
// and many blocks with an earlier request give the same greedy tokens with the
// cache on as with it off, and report the cached tokens.
TEST_F(EngineTest, PrefixCacheDoesNotChangeOutputs) {
  std::string system = "You are a helpful assistant. ";
  for (int i = 0; i < 12; ++i) system += "Rule " + std::to_string(i) + ": be concise and exact. ";
  const std::vector<std::string> prompts = {
      system + "Question: what is two plus two?",                       // warms the cache
      system + "Question: name a color.",                               // shares many blocks
      system.substr(0, 40) + "something else entirely, about trains.",  // ~1 block
      system.substr(0, 20) + "x",                                       // partial block only
      "Unrelated prompt about cooking pasta.",                          // nothing shared
  };
  auto run = [&](bool cache, std::vector<int32_t>* cached) {
    EngineOptions o;
    o.scheduler.prefix_cache = cache;
    Engine e(*model_, *tok_, o);
    std::vector<std::vector<int32_t>> out;
    for (const auto& p : prompts) {  // one after another: later ones can hit
      auto id = *e.Add(Greedy(p, 10));
      std::vector<SequenceOutput> outs;
      std::vector<int32_t> toks;
      while (e.HasWork()) {
        outs.clear();
        EXPECT_TRUE(e.Step(&outs).ok());
        for (auto& o : outs) {
          toks.insert(toks.end(), o.new_tokens.begin(), o.new_tokens.end());
          if (o.finished && cached) cached->push_back(o.cached_tokens);
        }
      }
      (void)id;
      out.push_back(toks);
    }
    EXPECT_EQ(e.block_pool().num_used(), 0);
    return out;
  };
  std::vector<int32_t> cached;
  auto off = run(false, nullptr);
  auto on = run(true, &cached);
  EXPECT_EQ(on, off);
  ASSERT_EQ(cached.size(), prompts.size());
  EXPECT_EQ(cached[0], 0);
  EXPECT_GE(cached[1], 64);
  EXPECT_EQ(cached[1] % 16, 0);
  EXPECT_EQ(cached[4], 0);
}

TEST_F(EngineTest, DeadlineEndsGenerationAndFreesBlocks) {
  Engine e(*model_, *tok_, {});
  GenerationRequest r = Greedy("Count to one thousand: 1, 2, 3,", 400);
  r.ignore_eos = true;
  r.deadline = Clock::now() + std::chrono::milliseconds(300);
  auto id = *e.Add(r);
  auto res = RunAll(e);
  EXPECT_EQ(res[id].reason, FinishReason::kDeadline);
  EXPECT_LT(res[id].tokens.size(), 400u);
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
