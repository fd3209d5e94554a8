// Test harness for output_processor_test.cc (header only, not part of the
// engine library): the default model's tokenizer, a real Scheduler over a
// KvBlockPool, and hand-made logits rows, driven in the order Engine::Step
// drives them:
//
//   Schedule(now) -> [expired: FinishSequence] -> Process -> UpdateFromOutput
//   -> TakeFinished -> Abort
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/generation.h"
#include "engine/kv_block_pool.h"
#include "engine/output_processor.h"
#include "engine/scheduler.h"
#include "model/gguf.h"
#include "model/tokenizer.h"
#include "util/test_support.h"
#include "util/utf8.h"

namespace brisk {

inline constexpr float kLow = -100.0f;
inline constexpr float kHigh = 10.0f;

inline bool IsValidUtf8(std::string_view s) {
  while (!s.empty()) {
    size_t len = 0;
    if (CheckUtf8(s, &len) != Utf8Check::kValid) return false;
    s.remove_prefix(len);
  }
  return true;
}

// A logits row that makes `tok` the argmax by far.
inline void Favour(std::span<float> row, int32_t tok) {
  std::fill(row.begin(), row.end(), kLow);
  row[tok] = kHigh;
}

// Everything one sample (request, index) received, in order.
struct SampleLog {
  std::vector<int32_t> tokens;
  std::vector<std::string> pieces;  // text of each output
  std::string text;
  int outputs = 0;
  int finished = 0;  // finished outputs: must end up exactly 1
  int finish_step = -1;
  SequenceOutput last;  // the last output (the finished one at the end)
};

// Fills the logits row of one sampled chunk; `st` is the sequence's
// scheduler state before the step's token is appended.
using RowFn = std::function<void(const SeqState& st, std::span<float> row)>;

// Scheduler + output processor, driven like Engine::Step.
class OutputHarness {
 public:
  OutputHarness(const Tokenizer& tok, int64_t context_limit, SchedulerOptions so = {},
                int64_t num_blocks = 256)
      : vocab_(tok.vocab_size()),
        pool_(num_blocks),
        sched_(so, &pool_),
        proc_(tok, context_limit) {}

  // Queues a request like Engine::Add; returns its first sequence id.
  int64_t Add(int64_t request_id, const GenerationRequest& r,
              double deadline_s = std::numeric_limits<double>::infinity()) {
    SeqState st;
    st.id = next_seq_id_;
    st.priority = r.priority;
    st.arrival_s = now;
    st.deadline_s = deadline_s;
    st.tokens = r.prompt;
    st.num_prompt = static_cast<int32_t>(r.prompt.size());
    EXPECT_TRUE(sched_.Add(std::move(st)).ok());
    proc_.Add(request_id, next_seq_id_, r);
    return next_seq_id_++;
  }
  void Cancel(int64_t request_id) { cancels_.push_back(request_id); }

  // One engine step; returns this step's outputs (also recorded in samples).
  std::vector<SequenceOutput> Step(const RowFn& fill) {
    std::vector<SequenceOutput> outs;
    for (int64_t rid : cancels_) proc_.FinishRequest(rid, FinishReason::kCancelled, sched_, &outs);
    cancels_.clear();
    TakeAndAbort();
    SchedulerOutput so = sched_.Schedule(now);
    for (int64_t sid : so.expired)
      proc_.FinishSequence(sid, FinishReason::kDeadline, sched_, &outs);
    if (!so.empty()) {
      proc_.PrefetchMasks(so.chunks, vocab_);  // as Engine::RunForward (a no-op unless on)
      size_t rows = 0;
      for (const ScheduledChunk& c : so.chunks) rows += c.sample;
      logits_.assign(rows * vocab_, kLow);
      int64_t r = 0;
      for (const ScheduledChunk& c : so.chunks) {
        const SeqState& st = *sched_.Find(c.id);
        if (c.pos_begin < st.num_prompt) proc_.NoteScheduled(st);  // as Engine::RunForward
        if (!c.sample) continue;
        fill(*sched_.Find(c.id), std::span<float>(logits_).subspan(r++ * vocab_, vocab_));
      }
      std::vector<SeqResult> results;
      proc_.Process(
          so.chunks, logits_, vocab_, sched_, [this] { return next_seq_id_++; }, &results, &outs);
      sched_.UpdateFromOutput(so, results);
    }
    TakeAndAbort();
    Record(outs);
    now += 0.01;
    ++step;
    return outs;
  }

  // Steps until the scheduler has nothing left (or max_steps).
  void Run(const RowFn& fill, int max_steps = 200) {
    for (int i = 0; i < max_steps && (sched_.HasWork() || !cancels_.empty()); ++i) Step(fill);
    EXPECT_FALSE(sched_.HasWork()) << "still running after " << max_steps << " steps";
  }

  // Records outputs produced outside Step() (direct FinishRequest calls).
  void Record(const std::vector<SequenceOutput>& outs) {
    for (const SequenceOutput& o : outs) {
      SampleLog& s = samples[{o.request_id, o.index}];
      s.tokens.insert(s.tokens.end(), o.new_tokens.begin(), o.new_tokens.end());
      s.pieces.push_back(o.text);
      s.text += o.text;
      ++s.outputs;
      if (o.finished) {
        ++s.finished;
        s.finish_step = step;
      }
      s.last = o;
    }
  }

  SampleLog& at(int64_t request_id, int index) { return samples[{request_id, index}]; }
  Scheduler& sched() { return sched_; }
  KvBlockPool& pool() { return pool_; }
  OutputProcessor& proc() { return proc_; }

  double now = 0;
  int step = 0;
  std::map<std::pair<int64_t, int>, SampleLog> samples;
  std::vector<int64_t> taken;  // every id TakeFinished returned, in order

 private:
  void TakeAndAbort() {
    for (int64_t sid : proc_.TakeFinished()) {
      taken.push_back(sid);
      sched_.Abort(sid);
    }
  }

  int vocab_;
  KvBlockPool pool_;
  Scheduler sched_;
  OutputProcessor proc_;
  int64_t next_seq_id_ = 1;
  std::vector<int64_t> cancels_;
  std::vector<float> logits_;
};

class OutputProcessorTest : public ::testing::Test {
 protected:
  static std::string ModelPath() {
    return std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  }
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(ModelPath())) return;
    auto g = GgufFile::Open(ModelPath());
    if (!g.ok()) {
      load_error_ = g.status().ToString();
      return;
    }
    gguf_ = std::move(*g).release();
    auto t = Tokenizer::FromGguf(*gguf_);
    if (!t.ok()) {
      load_error_ = t.status().ToString();
      return;
    }
    tok_ = std::move(*t).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete gguf_;
    tok_ = nullptr;
    gguf_ = nullptr;
  }
  void SetUp() override {
    if (!load_error_.empty()) FAIL() << ModelPath() << ": " << load_error_;
    if (!tok_) BRISK_SKIP_OR_FAIL_MISSING("the default model " << ModelPath());
  }

  // A greedy request for `n_prompt` prompt tokens.
  static GenerationRequest Request(int n_prompt, int max_tokens) {
    GenerationRequest r;
    const std::vector<int32_t> words = tok_->Encode(" the cat sat on a mat", false, false);
    for (int i = 0; i < n_prompt; ++i) r.prompt.push_back(words[i % words.size()]);
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    return r;
  }
  // Tokens of `text`, with no BOS.
  static std::vector<int32_t> Tok(const std::string& text) {
    return tok_->Encode(text, false, false);
  }
  // The only token of `text`.
  static int32_t Tok1(const std::string& text) {
    const std::vector<int32_t> t = Tok(text);
    EXPECT_EQ(t.size(), 1u) << "'" << text << "' is not one token";
    return t.empty() ? 0 : t[0];
  }
  // Produces script[k] as the k-th generated token of every sequence
  // (repeating the last one past the end).
  static RowFn Script(std::vector<int32_t> script) {
    return [script = std::move(script)](const SeqState& st, std::span<float> row) {
      const size_t g = static_cast<size_t>(st.num_generated());
      Favour(row, script[std::min(g, script.size() - 1)]);
    };
  }
  static int32_t Eos() { return tok_->eos_id().value_or(-1); }

  inline static GgufFile* gguf_ = nullptr;
  inline static Tokenizer* tok_ = nullptr;
  inline static std::string load_error_;
};

inline constexpr int64_t kContext = 2048;

}  // namespace brisk
