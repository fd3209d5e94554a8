// The scheduler with speculative drafts: draft positions ride on decode
// chunks within the leftover budget and free blocks, accepted ones count as
// computed, rejected ones give their blocks back, and the tokens every
// sequence ends with are the same as without drafts.
#include <gtest/gtest.h>

#include "engine/scheduler_test_sim.h"

namespace brisk::scheduler_test {
namespace {

// A driver like Sim, with a drafter that guesses the fake model's next
// tokens right for the first `right` positions and wrong after them.
struct DraftSim : Sim {
  using Sim::Sim;
  int draft_len = 4;
  int right = 2;
  int64_t drafted = 0, accepted = 0;

  void ProposeDrafts() {
    for (const auto& [id, gen] : max_gen) {
      const SeqState* s = sched.Find(id);
      if (!s || s->status != SeqStatus::kRunning || s->num_generated() == 0) continue;
      std::vector<int32_t> toks = s->tokens, draft;
      const int left = gen - static_cast<int>(outputs[id].size()) - 1;
      for (int i = 0; i < std::min(draft_len, left); ++i) {
        const int32_t t = i < right ? FakeNextToken(toks) : 999999;
        draft.push_back(t);
        toks.push_back(t);
      }
      sched.SetDraft(id, draft);
    }
  }

  void Step() {
    ProposeDrafts();
    SchedulerOutput out = sched.Schedule(now);
    int total = 0;
    for (const auto& c : out.chunks) total += c.num_positions();
    EXPECT_LE(total, sched.options().max_batch_tokens);
    std::vector<SeqResult> results;
    for (const auto& c : out.chunks) {
      const SeqState* s = sched.Find(c.id);
      ASSERT_NE(s, nullptr);
      EXPECT_EQ(c.pos_begin, s->num_computed);
      EXPECT_GE(static_cast<int64_t>(s->blocks.size()) * sched.options().block_size,
                c.pos_begin + c.num_positions());
      if (!c.draft.empty()) {
        EXPECT_EQ(c.n_tokens, 1);
      }
      if (!c.sample) continue;
      // Verification against the fake model: accept the matching prefix.
      std::vector<int32_t> toks = s->tokens;
      SeqResult r;
      r.id = c.id;
      drafted += static_cast<int64_t>(c.draft.size());
      for (int32_t d : c.draft) {
        const int32_t want = FakeNextToken(toks);
        if (d != want || static_cast<int>(outputs[c.id].size()) + 1 >= max_gen[c.id]) break;
        toks.push_back(d);
        outputs[c.id].push_back(d);
        ++r.accepted_draft;
      }
      accepted += r.accepted_draft;
      r.token = FakeNextToken(toks);
      outputs[c.id].push_back(r.token);
      r.finished = static_cast<int>(outputs[c.id].size()) >= max_gen[c.id];
      results.push_back(r);
    }
    sched.UpdateFromOutput(out, results);
    CheckAccounting();
    for (const auto& [id, g] : max_gen)
      if (const SeqState* s = sched.Find(id); s && s->status == SeqStatus::kRunning) {
        // Computed never runs ahead of the known tokens; blocks never hold
        // more than the known tokens need (rejected positions gave theirs back).
        EXPECT_LT(s->num_computed, s->num_tokens());
        EXPECT_LE(static_cast<int64_t>(s->blocks.size()), sched.BlocksFor(s->num_tokens()));
      }
    now += 0.01;
  }
  void RunAll(int max_steps = 100000) {
    for (int i = 0; i < max_steps && sched.HasWork(); ++i) Step();
    ASSERT_FALSE(sched.HasWork());
    EXPECT_EQ(pool.num_used(), 0);
  }
};

std::map<int64_t, std::vector<int32_t>> RunPlain(SchedulerOptions o, int64_t blocks, int n_seqs) {
  Sim sim(o, blocks);
  for (int i = 0; i < n_seqs; ++i)
    sim.Add(MakeSeq(i + 1, 5 + 3 * i, Priority::kInteractive, i, i), 20 + i);
  sim.RunAll();
  return sim.outputs;
}

TEST(SchedulerDraftsTest, SameTokensAsWithoutDraftsAndAccountingHolds) {
  for (int right : {0, 1, 2, 4}) {
    SCOPED_TRACE(testing::Message() << "right " << right);
    DraftSim sim(Opts(64, 8, 4), 256);
    sim.right = right;
    for (int i = 0; i < 6; ++i)
      sim.Add(MakeSeq(i + 1, 5 + 3 * i, Priority::kInteractive, i, i), 20 + i);
    sim.RunAll();
    EXPECT_EQ(sim.outputs, RunPlain(Opts(64, 8, 4), 256, 6));
    EXPECT_GT(sim.drafted, 0);
    if (right == 0) {
      EXPECT_EQ(sim.accepted, 0);
    } else if (right >= 2) {
      EXPECT_GT(sim.accepted, sim.drafted / 4);
    }
  }
}

TEST(SchedulerDraftsTest, DraftsOnlyUseLeftoverBudgetAndBlocksAndNeverPreempt) {
  // A tight budget: 6 decodes take 6 of 8 tokens, drafts share the other 2.
  DraftSim tight(Opts(8, 6, 4), 512);
  tight.right = 4;
  for (int i = 0; i < 6; ++i) tight.Add(MakeSeq(i + 1, 3, Priority::kInteractive, i, 10 * i), 12);
  tight.RunAll();
  Sim tight_plain(Opts(8, 6, 4), 512);
  for (int i = 0; i < 6; ++i)
    tight_plain.Add(MakeSeq(i + 1, 3, Priority::kInteractive, i, 10 * i), 12);
  tight_plain.RunAll();
  EXPECT_EQ(tight.outputs, tight_plain.outputs);
  EXPECT_GT(tight.accepted, 0);
  EXPECT_EQ(tight.sched.stats().preemptions, 0);

  // A tight KV pool: drafts get only blocks nobody needs; no preemption comes
  // from them, and the outputs are those of a run without drafts.
  const int64_t blocks = 24;
  DraftSim sim(Opts(64, 4, 4), blocks);
  sim.right = 4;
  sim.draft_len = 8;
  for (int i = 0; i < 4; ++i)
    sim.Add(MakeSeq(i + 1, 5 + 3 * i, Priority::kInteractive, i, i), 20 + i);
  sim.RunAll();
  Sim plain(Opts(64, 4, 4), blocks);
  for (int i = 0; i < 4; ++i)
    plain.Add(MakeSeq(i + 1, 5 + 3 * i, Priority::kInteractive, i, i), 20 + i);
  plain.RunAll();
  EXPECT_EQ(sim.outputs, plain.outputs);
  EXPECT_LE(sim.sched.stats().preemptions, plain.sched.stats().preemptions);
}

TEST(SchedulerDraftsTest, DraftOfAWaitingOrUnknownSequenceIsIgnored) {
  KvBlockPool pool(64);
  Scheduler sched(Opts(), &pool);
  ASSERT_TRUE(sched.Add(MakeSeq(1, 4)).ok());
  sched.SetDraft(1, {1, 2, 3});  // still waiting: nothing to verify against
  sched.SetDraft(77, {1});
  const SchedulerOutput out = sched.Schedule(0);
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_TRUE(out.chunks[0].draft.empty());
  EXPECT_EQ(out.chunks[0].n_tokens, 4);
}

}  // namespace
}  // namespace brisk::scheduler_test
