// The output processor with no model forward pass: the real default model's
// tokenizer, a real Scheduler over a KvBlockPool, and hand-made logits rows
// (one high value at the token a step should produce), driven like
// Engine::Step (engine/output_processor_test_harness.h).
#include "engine/output_processor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/output_processor_test_harness.h"

namespace brisk {
namespace {

// ---- (1) detokenization across token boundaries -------------------------------

TEST_F(OutputProcessorTest, MultiByteCharacterSplitAcrossTokensComesOutWhole) {
  // Characters the byte-level BPE splits into several tokens, some of which
  // end in the middle of the character.
  for (const std::string ch : {"\U0001D11E", "\U0001F980", "\u9B31"}) {  // 𝄞 🦀 鬱
    SCOPED_TRACE(ch);
    std::vector<int32_t> script = Tok(" a");
    const std::vector<int32_t> ch_toks = Tok(ch);
    ASSERT_GE(ch_toks.size(), 2u) << "one token: pick a rarer character";
    ASSERT_FALSE(IsValidUtf8(tok_->TokenToPiece(ch_toks[0])));
    script.insert(script.end(), ch_toks.begin(), ch_toks.end());
    script.push_back(Tok1(" b"));
    const int n = static_cast<int>(script.size());

    OutputHarness h(*tok_, kContext);
    h.Add(1, Request(5, n));
    h.Run(Script(script));
    const SampleLog& s = h.at(1, 0);
    EXPECT_EQ(s.tokens, script);
    EXPECT_EQ(s.text, " a" + ch + " b");
    EXPECT_EQ(s.last.reason, FinishReason::kLength);
    // Every output is valid UTF-8; exactly one holds the whole character.
    int with_char = 0;
    for (const std::string& p : s.pieces) {
      EXPECT_TRUE(IsValidUtf8(p)) << "half a character emitted";
      with_char += p.find(ch) != std::string::npos;
    }
    EXPECT_EQ(with_char, 1);
    // The tokens before the last byte of the character emitted nothing.
    ASSERT_EQ(s.pieces.size(), script.size());
    for (size_t i = 1; i + 1 < 1 + ch_toks.size(); ++i) EXPECT_EQ(s.pieces[i], "") << i;
    EXPECT_EQ(s.pieces[ch_toks.size()], ch);
  }
}

// ---- (2) stop strings, stop tokens, EOS ----------------------------------------

TEST_F(OutputProcessorTest, StopStringSplitAcrossTokensIsHeldBackThenCut) {
  const std::vector<int32_t> script = {Tok1(" one"), Tok1(" two"), Tok1(" three"), Tok1(" four")};
  GenerationRequest r = Request(4, 50);
  r.stop = {"two th"};
  OutputHarness h(*tok_, kContext);
  const int64_t sid = h.Add(7, r);
  h.Run(Script(script));
  const SampleLog& s = h.at(7, 0);
  // " one" is emitted at once; " two" emits only " " (the "two" may start
  // the stop string); " three" completes it: nothing more, finish stop.
  ASSERT_EQ(s.pieces.size(), 3u);
  EXPECT_EQ(s.pieces[0], " one");
  EXPECT_EQ(s.pieces[1], " ");
  EXPECT_EQ(s.pieces[2], "");
  EXPECT_EQ(s.text, " one ");
  EXPECT_EQ(s.finished, 1);
  EXPECT_EQ(s.last.reason, FinishReason::kStop);
  EXPECT_EQ(s.last.completion_tokens, 3);
  EXPECT_EQ(s.tokens, std::vector<int32_t>(script.begin(), script.begin() + 3));
  EXPECT_EQ(h.taken, std::vector<int64_t>{sid});
  EXPECT_EQ(h.pool().num_used(), 0);
}

TEST_F(OutputProcessorTest, HeldBackTextThatIsNotAStopIsReleased) {
  // " two" is held (prefix of the stop), " four" shows it was not a stop.
  const std::vector<int32_t> script = {Tok1(" one"), Tok1(" two"), Tok1(" four")};
  GenerationRequest r = Request(4, 3);
  r.stop = {"two th"};
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Script(script));
  const SampleLog& s = h.at(1, 0);
  EXPECT_EQ(s.text, " one two four");
  EXPECT_EQ(s.last.reason, FinishReason::kLength);
}

TEST_F(OutputProcessorTest, StopTokenEndsWithStopAndFlushesHeldText) {
  const int32_t stop_tok = Tok1(" halt");
  const std::vector<int32_t> script = {Tok1(" one"), Tok1(" two"), stop_tok, Tok1(" four")};
  GenerationRequest r = Request(4, 50);
  r.stop = {"two th"};
  r.stop_token_ids = {stop_tok};
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Script(script));
  const SampleLog& s = h.at(1, 0);
  // The held "two" was not a stop string after all: it is the user's. The
  // stop token itself produces no text.
  EXPECT_EQ(s.text, " one two");
  EXPECT_EQ(s.last.reason, FinishReason::kStop);
  EXPECT_EQ(s.last.completion_tokens, 3);
  EXPECT_EQ(s.tokens.size(), 3u);
}

TEST_F(OutputProcessorTest, EosEndsWithStopUnlessIgnoreEos) {
  ASSERT_GE(Eos(), 0);
  ASSERT_TRUE(tok_->IsEog(Eos()));
  const std::vector<int32_t> script = {Tok1(" one"), Eos(), Tok1(" two"), Tok1(" three")};
  {
    OutputHarness h(*tok_, kContext);
    h.Add(1, Request(4, 50));
    h.Run(Script(script));
    const SampleLog& s = h.at(1, 0);
    EXPECT_EQ(s.text, " one");
    EXPECT_EQ(s.last.reason, FinishReason::kStop);
    EXPECT_EQ(s.last.completion_tokens, 2);
    EXPECT_EQ(s.finished, 1);
  }
  {
    GenerationRequest r = Request(4, 4);
    r.ignore_eos = true;
    OutputHarness h(*tok_, kContext);
    h.Add(1, r);
    h.Run(Script(script));
    const SampleLog& s = h.at(1, 0);
    EXPECT_EQ(s.tokens, script);
    EXPECT_EQ(s.text, " one two three");  // EOS is a control token: no text
    EXPECT_EQ(s.last.reason, FinishReason::kLength);
    EXPECT_EQ(s.last.completion_tokens, 4);
  }
}

// ---- (3) length limits ---------------------------------------------------------

TEST_F(OutputProcessorTest, MaxTokensEndsWithLength) {
  OutputHarness h(*tok_, kContext);
  h.Add(3, Request(6, 3));
  h.Run(Script({Tok1(" one"), Tok1(" two"), Tok1(" three"), Tok1(" four")}));
  const SampleLog& s = h.at(3, 0);
  EXPECT_EQ(s.text, " one two three");
  EXPECT_EQ(s.outputs, 3);
  EXPECT_EQ(s.finished, 1);
  EXPECT_TRUE(s.last.finished);
  EXPECT_EQ(s.last.reason, FinishReason::kLength);
  EXPECT_EQ(s.last.prompt_tokens, 6);
  EXPECT_EQ(s.last.completion_tokens, 3);
  EXPECT_GE(s.last.queue_s, 0);
}

TEST_F(OutputProcessorTest, ContextLimitEndsWithLength) {
  // 5 prompt tokens in a context of 8: three tokens fit, then length.
  OutputHarness h(*tok_, /*context_limit=*/8);
  h.Add(1, Request(5, 100));
  h.Run(Script({Tok1(" one"), Tok1(" two"), Tok1(" three"), Tok1(" four")}));
  const SampleLog& s = h.at(1, 0);
  EXPECT_EQ(s.text, " one two three");
  EXPECT_EQ(s.last.reason, FinishReason::kLength);
  EXPECT_EQ(s.last.prompt_tokens + s.last.completion_tokens, 8);
}

TEST_F(OutputProcessorTest, LengthFlushesTextHeldForAStopString) {
  GenerationRequest r = Request(4, 2);
  r.stop = {"two th"};
  OutputHarness h(*tok_, kContext);
  h.Add(1, r);
  h.Run(Script({Tok1(" one"), Tok1(" two"), Tok1(" three")}));
  const SampleLog& s = h.at(1, 0);
  EXPECT_EQ(s.text, " one two");
  EXPECT_EQ(s.last.reason, FinishReason::kLength);
}

// ---- batching: rows belong to sampled chunks only ------------------------------

TEST_F(OutputProcessorTest, LogitsRowsFollowSampledChunksOnly) {
  SchedulerOptions so;
  so.prefill_chunk_tokens = 16;
  OutputHarness h(*tok_, kContext, so);
  // A long prompt takes three prefill chunks (unsampled) while the short
  // one decodes; each sequence must get the tokens of its own row.
  const int64_t a = h.Add(1, Request(40, 3));
  const int64_t b = h.Add(2, Request(3, 4));
  const int32_t ta = Tok1(" apple"), tb = Tok1(" banana");
  h.Run([&](const SeqState& st, std::span<float> row) {
    ASSERT_TRUE(st.id == a || st.id == b);
    Favour(row, st.id == a ? ta : tb);
  });
  EXPECT_EQ(h.at(1, 0).text, " apple apple apple");
  EXPECT_EQ(h.at(2, 0).text, " banana banana banana banana");
  EXPECT_LT(h.at(2, 0).finish_step, h.at(1, 0).finish_step);
}

// ---- (4) n > 1 -----------------------------------------------------------------

// Every sample of `rid` got exactly one finished output, with usage.
void ExpectOneFinishPerSample(OutputHarness& h, int64_t rid, int n, int32_t n_prompt) {
  for (int k = 0; k < n; ++k) {
    SCOPED_TRACE(testing::Message() << "request " << rid << " index " << k);
    ASSERT_TRUE(h.samples.count({rid, k}) == 1);
    const SampleLog& s = h.at(rid, k);
    EXPECT_EQ(s.finished, 1);
    EXPECT_TRUE(s.last.finished);
    EXPECT_EQ(s.last.request_id, rid);
    EXPECT_EQ(s.last.index, k);
    EXPECT_EQ(s.last.prompt_tokens, n_prompt);
    EXPECT_EQ(s.last.completion_tokens, static_cast<int32_t>(s.tokens.size()));
  }
  EXPECT_FALSE(h.samples.count({rid, n})) << "more than n samples";
}

// n = 4 over a row with four equally likely tokens: every sample's first
// token comes from the parent's one row; sample i then writes fillers until
// it has generated 2 + position of its first token, then EOS, so samples
// with different first tokens finish at different steps.
void RunForks(const Tokenizer& tok, std::optional<uint64_t> seed) {
  const std::vector<int32_t> firsts = {
      tok.Encode(" A", false, false)[0], tok.Encode(" B", false, false)[0],
      tok.Encode(" C", false, false)[0], tok.Encode(" D", false, false)[0]};
  const int32_t filler = tok.Encode(" x", false, false)[0];
  const int32_t eos = *tok.eos_id();
  constexpr int kN = 4;
  GenerationRequest r;
  r.prompt = tok.Encode(" pick a letter", false, false);
  r.n = kN;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = seed;
  r.max_tokens = 50;
  OutputHarness h(tok, kContext);
  h.Add(9, r);
  int rows = 0;
  const RowFn fill = [&](const SeqState& st, std::span<float> row) {
    ++rows;
    std::fill(row.begin(), row.end(), kLow);
    if (st.num_generated() == 0) {
      for (int32_t t : firsts) row[t] = kHigh;
      return;
    }
    const int32_t first = st.tokens[st.num_prompt];
    const auto pos = std::find(firsts.begin(), firsts.end(), first) - firsts.begin();
    row[st.num_generated() >= 2 + pos ? eos : filler] = kHigh;
  };
  std::vector<SequenceOutput> outs = h.Step(fill);  // the whole prompt, first tokens
  EXPECT_EQ(rows, 1) << "forks must draw from the parent's row";
  ASSERT_EQ(outs.size(), static_cast<size_t>(kN));
  std::set<int> indices;
  std::set<int32_t> first_tokens;
  for (const SequenceOutput& o : outs) {
    indices.insert(o.index);
    ASSERT_EQ(o.new_tokens.size(), 1u);
    EXPECT_NE(std::find(firsts.begin(), firsts.end(), o.new_tokens[0]), firsts.end());
    first_tokens.insert(o.new_tokens[0]);
    EXPECT_FALSE(o.finished);
  }
  EXPECT_EQ(indices, (std::set<int>{0, 1, 2, 3}));
  EXPECT_GT(first_tokens.size(), 1u) << "the forks' samplers are not seeded apart";
  EXPECT_EQ(h.sched().num_seqs(), kN);
  h.Run(fill);

  ExpectOneFinishPerSample(h, 9, kN, static_cast<int32_t>(r.prompt.size()));
  std::set<int> finish_steps;
  for (int k = 0; k < kN; ++k) {
    const SampleLog& s = h.at(9, k);
    const int32_t first = s.tokens[0];
    const auto pos = std::find(firsts.begin(), firsts.end(), first) - firsts.begin();
    EXPECT_EQ(s.last.reason, FinishReason::kStop);
    EXPECT_EQ(s.tokens.size(), static_cast<size_t>(pos + 3));
    std::string want = tok.TokenToPiece(first);
    for (int i = 0; i < pos + 1; ++i) want += " x";
    EXPECT_EQ(s.text, want);
    finish_steps.insert(s.finish_step);
  }
  EXPECT_EQ(finish_steps.size(), first_tokens.size()) << "forks must finish independently";
  // Each sequence was taken once, and all blocks (shared or not) came back.
  EXPECT_EQ(h.taken.size(), static_cast<size_t>(kN));
  EXPECT_EQ(std::set<int64_t>(h.taken.begin(), h.taken.end()).size(), h.taken.size());
  EXPECT_EQ(h.proc().num_sequences(), 0u);
  EXPECT_EQ(h.pool().num_used(), 0);
}

TEST_F(OutputProcessorTest, ForksDrawTheirFirstTokensFromOneRowAndFinishApart) {
  RunForks(*tok_, uint64_t{1234});
}

TEST_F(OutputProcessorTest, ForksWithoutRequestSeedAreSeededApart) {
  RunForks(*tok_, std::nullopt);
}

TEST_F(OutputProcessorTest, ForksThatFinishOnTheirFirstTokenAreFreed) {
  GenerationRequest r = Request(20, 1);
  r.n = 3;
  OutputHarness h(*tok_, kContext);
  h.Add(2, r);
  const std::vector<SequenceOutput> outs = h.Step(Script({Tok1(" only")}));
  EXPECT_EQ(outs.size(), 3u);
  EXPECT_FALSE(h.sched().HasWork());
  ExpectOneFinishPerSample(h, 2, 3, 20);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(h.at(2, k).text, " only");
    EXPECT_EQ(h.at(2, k).last.reason, FinishReason::kLength);
  }
  EXPECT_EQ(h.taken.size(), 3u);
  EXPECT_EQ(h.proc().num_sequences(), 0u);
  EXPECT_EQ(h.pool().num_used(), 0);
}

TEST_F(OutputProcessorTest, CancelBeforeFirstTokenFinishesAllSamples) {
  SchedulerOptions so;
  so.prefill_chunk_tokens = 16;
  for (int steps_before_cancel : {0, 1}) {
    SCOPED_TRACE(steps_before_cancel);
    OutputHarness h(*tok_, kContext, so);
    GenerationRequest r = Request(40, 10);
    r.n = 3;
    const int64_t sid = h.Add(5, r);
    const RowFn fill = Script({Tok1(" one")});
    for (int i = 0; i < steps_before_cancel; ++i)
      EXPECT_TRUE(h.Step(fill).empty());  // a prefill chunk, nothing sampled
    h.Cancel(5);
    const std::vector<SequenceOutput> outs = h.Step(fill);
    EXPECT_EQ(outs.size(), 3u);
    ExpectOneFinishPerSample(h, 5, 3, 40);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(h.at(5, k).last.reason, FinishReason::kCancelled);
      EXPECT_EQ(h.at(5, k).last.completion_tokens, 0);
      EXPECT_EQ(h.at(5, k).text, "");
    }
    EXPECT_EQ(h.taken, std::vector<int64_t>{sid});
    EXPECT_FALSE(h.sched().HasWork());
    EXPECT_EQ(h.proc().num_sequences(), 0u);
    EXPECT_EQ(h.pool().num_used(), 0);
  }
}

TEST_F(OutputProcessorTest, CancelAfterForksFinishesOnlyUnfinishedSamples) {
  GenerationRequest r = Request(10, 30);
  r.n = 3;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 99;
  const int32_t a = Tok1(" A"), b = Tok1(" B"), filler = Tok1(" x");
  OutputHarness h(*tok_, kContext);
  h.Add(4, r);
  // The first tokens are A or B; a sample that drew A stops at once (stop
  // token), the others go on until cancelled.
  const RowFn fill = [&](const SeqState& st, std::span<float> row) {
    std::fill(row.begin(), row.end(), kLow);
    if (st.num_generated() == 0) {
      row[a] = row[b] = kHigh;
    } else {
      row[st.tokens[st.num_prompt] == a ? Eos() : filler] = kHigh;
    }
  };
  for (int i = 0; i < 4; ++i) h.Step(fill);
  h.Cancel(4);
  h.Run(fill);
  ExpectOneFinishPerSample(h, 4, 3, 10);
  for (int k = 0; k < 3; ++k) {
    const SampleLog& s = h.at(4, k);
    if (s.tokens[0] == a) {
      EXPECT_EQ(s.last.reason, FinishReason::kStop);
      EXPECT_EQ(s.tokens.size(), 2u);
    } else {
      EXPECT_EQ(s.last.reason, FinishReason::kCancelled);
      EXPECT_EQ(s.tokens.size(), 4u);
    }
  }
  EXPECT_EQ(h.taken.size(), 3u);
  EXPECT_EQ(h.pool().num_used(), 0);
}

// ---- (5) deadline --------------------------------------------------------------

TEST_F(OutputProcessorTest, DeadlineFlushesHeldBackText) {
  GenerationRequest r = Request(4, 50);
  r.stop = {"two th"};
  OutputHarness h(*tok_, kContext);
  const int64_t sid = h.Add(1, r, /*deadline_s=*/0.015);
  const RowFn fill = Script({Tok1(" one"), Tok1(" two"), Tok1(" three")});
  h.Step(fill);  // now 0: " one"
  h.Step(fill);  // now 0.01: " " emitted, "two" held
  EXPECT_EQ(h.at(1, 0).text, " one ");
  const std::vector<SequenceOutput> outs = h.Step(fill);  // now 0.02: expired
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].text, "two");
  EXPECT_TRUE(outs[0].new_tokens.empty());
  EXPECT_TRUE(outs[0].finished);
  EXPECT_EQ(outs[0].reason, FinishReason::kDeadline);
  EXPECT_EQ(outs[0].prompt_tokens, 4);
  EXPECT_EQ(outs[0].completion_tokens, 2);
  EXPECT_EQ(h.at(1, 0).text, " one two");
  EXPECT_EQ(h.taken, std::vector<int64_t>{sid});
  EXPECT_FALSE(h.sched().HasWork());
  EXPECT_EQ(h.pool().num_used(), 0);
}

TEST_F(OutputProcessorTest, DeadlineMidCharacterEmitsReplacement) {
  const std::vector<int32_t> crab = Tok("\U0001F980");
  ASSERT_GE(crab.size(), 2u);
  OutputHarness h(*tok_, kContext);
  h.Add(1, Request(4, 50), /*deadline_s=*/0.005);
  const std::vector<SequenceOutput> first = h.Step(Script(crab));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].text, "");  // the first bytes of the character
  const std::vector<SequenceOutput> outs = h.Step(Script(crab));
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].reason, FinishReason::kDeadline);
  EXPECT_EQ(outs[0].text, kUtf8Replacement);
}

TEST_F(OutputProcessorTest, DeadlineOfNotYetForkedRequestFinishesAllSamples) {
  GenerationRequest r = Request(30, 10);
  r.n = 2;
  SchedulerOptions so;
  so.prefill_chunk_tokens = 16;
  OutputHarness h(*tok_, kContext, so);
  h.Add(6, r, /*deadline_s=*/0.005);
  h.Run(Script({Tok1(" one")}));
  ExpectOneFinishPerSample(h, 6, 2, 30);
  EXPECT_EQ(h.at(6, 0).last.reason, FinishReason::kDeadline);
  EXPECT_EQ(h.at(6, 1).last.reason, FinishReason::kDeadline);
}

// The usage of a deadline-ended sample should report what the scheduler knew
// about it (prefix-cache hits, queue time), like any other finish, although
// the scheduler forgets an expired sequence before FinishSequence runs.
TEST_F(OutputProcessorTest, DeadlineKeepsCachedTokensAndQueueTime) {
  OutputHarness h(*tok_, kContext);
  const RowFn fill = Script({Tok1(" one"), Tok1(" two")});
  h.Add(1, Request(40, 2));
  h.Run(fill);
  h.Add(2, Request(40, 2));
  h.Run(fill);
  const int32_t cached = h.at(2, 0).last.cached_tokens;
  EXPECT_GT(cached, 0);
  h.Add(3, Request(40, 50), h.now + 0.015);
  h.Run(fill);
  const SampleLog& s = h.at(3, 0);
  EXPECT_EQ(s.last.reason, FinishReason::kDeadline);
  EXPECT_EQ(s.last.cached_tokens, cached);
  EXPECT_GE(s.last.queue_s, 0);
}

// ---- (6) TakeFinished ----------------------------------------------------------

TEST_F(OutputProcessorTest, TakeFinishedReturnsEachSequenceOnceAndForgetsIt) {
  KvBlockPool pool(64);
  Scheduler sched({}, &pool);
  OutputProcessor proc(*tok_, kContext);
  GenerationRequest r = Request(5, 1);
  SeqState st;
  st.id = 42;
  st.tokens = r.prompt;
  st.num_prompt = 5;
  ASSERT_TRUE(sched.Add(std::move(st)).ok());
  proc.Add(/*request_id=*/7, /*seq_id=*/42, r);
  EXPECT_EQ(proc.num_sequences(), 1u);
  EXPECT_TRUE(proc.TakeFinished().empty());

  SchedulerOutput so = sched.Schedule(0);
  ASSERT_EQ(so.chunks.size(), 1u);
  std::vector<float> logits(tok_->vocab_size());
  Favour(logits, Tok1(" one"));
  std::vector<SeqResult> results;
  std::vector<SequenceOutput> outs;
  int64_t next_id = 100;
  proc.Process(
      so.chunks, logits, tok_->vocab_size(), sched, [&] { return next_id++; }, &results, &outs);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, 42);
  EXPECT_TRUE(results[0].finished);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_TRUE(outs[0].finished);
  sched.UpdateFromOutput(so, results);

  EXPECT_EQ(proc.TakeFinished(), std::vector<int64_t>{42});
  EXPECT_TRUE(proc.TakeFinished().empty());
  sched.Abort(42);  // already gone: a no-op
  EXPECT_EQ(proc.num_sequences(), 0u);
  // Forgotten: finishing the request or the sequence again yields nothing.
  outs.clear();
  proc.FinishRequest(7, FinishReason::kCancelled, sched, &outs);
  proc.FinishSequence(42, FinishReason::kDeadline, sched, &outs);
  EXPECT_TRUE(outs.empty());
  EXPECT_TRUE(proc.TakeFinished().empty());
  EXPECT_FALSE(sched.HasWork());
  EXPECT_EQ(pool.num_used(), 0);
}

TEST_F(OutputProcessorTest, CancelTwiceReportsOnce) {
  OutputHarness h(*tok_, kContext);
  h.Add(1, Request(5, 50));
  const RowFn fill = Script({Tok1(" one")});
  h.Step(fill);
  h.Cancel(1);
  h.Cancel(1);
  h.Step(fill);
  h.Cancel(1);
  h.Step(fill);
  ExpectOneFinishPerSample(h, 1, 1, 5);
  EXPECT_EQ(h.at(1, 0).last.reason, FinishReason::kCancelled);
  EXPECT_EQ(h.taken.size(), 1u);
}

}  // namespace
}  // namespace brisk
