// The scheduler test driver: no model; forward outputs are made up by a
// deterministic function of each sequence's tokens, so outputs can be
// compared across runs. Shared by scheduler_test.cc and
// scheduler_fair_share_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "engine/scheduler.h"

namespace brisk::scheduler_test {

inline int32_t FakeNextToken(const std::vector<int32_t>& toks) {
  uint32_t h = 2166136261u;
  for (int32_t t : toks) h = (h ^ static_cast<uint32_t>(t)) * 16777619u;
  return static_cast<int32_t>(h % 1000);
}

inline SeqState MakeSeq(int64_t id, int n_prompt, Priority p = Priority::kInteractive,
                        double arrival = 0, int first_token = 0) {
  SeqState s;
  s.id = id;
  s.priority = p;
  s.arrival_s = arrival;
  for (int i = 0; i < n_prompt; ++i) s.tokens.push_back(first_token + i);
  s.num_prompt = n_prompt;
  return s;
}

// Drives a scheduler like the engine does, checking invariants every step.
struct Sim {
  // locals: local pages per block (sliding-window paging, o.sliding_window).
  Sim(SchedulerOptions o, int64_t blocks, int locals = 0) : pool(blocks, locals), sched(o, &pool) {}
  KvBlockPool pool;
  Scheduler sched;
  std::map<int64_t, int> max_gen;                   // id -> tokens to generate
  std::map<int64_t, std::vector<int32_t>> outputs;  // id -> generated tokens
  std::vector<int64_t> finish_order;
  double now = 0;
  // n > 1: when > 0, a sequence's first sample forks this many children.
  int fork_children = 0;
  int64_t next_child_id = 1000000;

  void Add(SeqState s, int gen) {
    max_gen[s.id] = gen;
    ASSERT_TRUE(sched.Add(std::move(s)).ok());
  }
  SchedulerOutput Step() {
    SchedulerOutput out = sched.Schedule(now);
    int total = 0;
    for (const auto& c : out.chunks) total += c.n_tokens;
    EXPECT_LE(total, sched.options().max_batch_tokens);
    std::vector<SeqResult> results;
    for (const auto& c : out.chunks) {
      const SeqState* s = sched.Find(c.id);
      EXPECT_NE(s, nullptr);
      EXPECT_EQ(c.pos_begin, s->num_computed);
      EXPECT_GE(static_cast<int64_t>(s->blocks.size()) * sched.options().block_size,
                c.pos_begin + c.n_tokens);
      CheckWindowHeld(*s, c);
      if (!c.sample) continue;
      std::vector<int32_t> toks(s->tokens.begin(), s->tokens.end());
      SeqResult r;
      r.id = c.id;
      r.token = FakeNextToken(toks);
      outputs[c.id].push_back(r.token);
      r.finished = static_cast<int>(outputs[c.id].size()) >= max_gen[c.id];
      if (r.finished) finish_order.push_back(c.id);
      if (fork_children > 0 && s->num_generated() == 0 && !r.finished) {
        for (int k = 0; k < fork_children; ++k) {
          const int64_t child = next_child_id++;
          r.forks.emplace_back(child, r.token + 1 + k);
          max_gen[child] = max_gen[c.id];
          outputs[child].push_back(r.token + 1 + k);
        }
      }
      results.push_back(r);
    }
    sched.UpdateFromOutput(out, results);
    CheckAccounting();
    now += 0.01;
    return out;
  }
  // Window paging: every block the chunk's local layers read or write
  // still has its local pages.
  void CheckWindowHeld(const SeqState& s, const ScheduledChunk& c) {
    const int w = sched.options().sliding_window, bs = sched.options().block_size;
    if (w <= 0 || pool.locals_per_block() == 0) return;
    const int64_t end = sched.BlocksFor(int64_t{c.pos_begin} + c.num_positions());
    for (int64_t b = std::max(0, c.pos_begin - w + 1) / bs; b < end; ++b)
      EXPECT_EQ(pool.Locals(s.blocks[static_cast<size_t>(b)]).size(),
                static_cast<size_t>(pool.locals_per_block()))
          << "seq " << s.id << " block " << b << " at position " << c.pos_begin;
  }
  void CheckAccounting() {
    std::map<int32_t, int> refs;
    for (const auto& [id, g] : max_gen) {
      const SeqState* s = sched.Find(id);
      if (!s) continue;
      for (int32_t b : s->blocks) ++refs[b];
    }
    int64_t pages = static_cast<int64_t>(refs.size());
    for (const auto& [b, n] : refs) pages += static_cast<int64_t>(pool.Locals(b).size());
    ASSERT_EQ(pages, pool.num_used());
    for (auto& [b, n] : refs) ASSERT_EQ(pool.RefCount(b), n) << "block " << b;
    ASSERT_EQ(pool.num_used() + pool.num_free(), pool.num_blocks());
    // Running slots per tenant match the running sequences.
    std::map<uint64_t, int64_t> seats;
    for (const auto& [id, g] : max_gen) {
      const SeqState* s = sched.Find(id);
      if (s && s->status == SeqStatus::kRunning) seats[s->tenant] += s->num_seats;
    }
    for (const auto& [id, g] : max_gen) {
      if (const SeqState* s = sched.Find(id)) {
        ASSERT_EQ(sched.TenantSeats(s->tenant), seats[s->tenant]) << "tenant " << s->tenant;
      }
    }
  }
  void RunAll(int max_steps = 100000) {
    for (int i = 0; i < max_steps && sched.HasWork(); ++i) Step();
    ASSERT_FALSE(sched.HasWork());
    EXPECT_EQ(pool.num_used(), 0);
  }
};

inline SchedulerOptions Opts(int budget = 64, int max_seqs = 16, int bs = 4) {
  SchedulerOptions o;
  o.max_batch_tokens = budget;
  o.max_concurrent_sequences = max_seqs;
  o.block_size = bs;
  o.prefix_cache = false;
  return o;
}

}  // namespace brisk::scheduler_test
