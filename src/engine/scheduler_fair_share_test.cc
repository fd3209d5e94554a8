// Fair share of running slots between callers (tenants): the scheduler with no
// model, driven by scheduler_test_sim.h.
#include <gtest/gtest.h>

#include "engine/scheduler.h"
#include "engine/scheduler_test_sim.h"

namespace brisk {
namespace {

using namespace scheduler_test;

SeqState TenantSeq(int64_t id, uint64_t tenant, double arrival, int n_prompt = 3) {
  auto s = MakeSeq(id, n_prompt, Priority::kInteractive, arrival, static_cast<int>(id) * 10);
  s.tenant = tenant;
  return s;
}

int RunningOf(const Scheduler& sched, const Sim& sim, uint64_t tenant) {
  int n = 0;
  for (const auto& [id, g] : sim.max_gen)
    if (const SeqState* s = sched.Find(id))
      n += s->tenant == tenant && s->status == SeqStatus::kRunning;
  return n;
}

// One caller's long requests hold every running slot; another caller's
// request arriving later takes one of them at once instead of waiting for
// one to finish (the other caller's latest sequence is preempted).
TEST(SchedulerTest, FairShareTakesASlotFromATenantHoldingAll) {
  Sim sim(Opts(64, 4), 256);
  for (int64_t id = 1; id <= 8; ++id) sim.Add(TenantSeq(id, 1, 0.001 * id), 500);
  sim.Step();
  sim.Step();
  ASSERT_EQ(RunningOf(sim.sched, sim, 1), 4);
  sim.Add(TenantSeq(100, 2, sim.now), 2);
  auto out = sim.Step();
  EXPECT_EQ(out.preempted, (std::vector<int64_t>{4}));  // tenant 1's latest running
  bool scheduled = false;
  for (const auto& c : out.chunks) scheduled |= c.id == 100;
  EXPECT_TRUE(scheduled) << "the newcomer's prompt is computed in the same step";
  EXPECT_EQ(RunningOf(sim.sched, sim, 1), 3);
  sim.Step();
  sim.Step();
  EXPECT_EQ(sim.finish_order, (std::vector<int64_t>{100}));
}

// Two callers end with equal shares, and then nothing more is preempted.
TEST(SchedulerTest, FairShareSettlesAtEqualSharesWithoutThrashing) {
  Sim sim(Opts(64, 6), 4096);  // KV for all: only slots are contended
  for (int64_t id = 1; id <= 10; ++id) sim.Add(TenantSeq(id, 1, 0.001 * id), 300);
  sim.Step();
  for (int64_t id = 11; id <= 20; ++id) sim.Add(TenantSeq(id, 2, sim.now + 0.001 * id), 300);
  for (int i = 0; i < 5; ++i) sim.Step();
  EXPECT_EQ(RunningOf(sim.sched, sim, 1), 3);
  EXPECT_EQ(RunningOf(sim.sched, sim, 2), 3);
  const int64_t preemptions = sim.sched.stats().preemptions;
  EXPECT_EQ(preemptions, 3);
  for (int i = 0; i < 50; ++i) sim.Step();
  EXPECT_EQ(sim.sched.stats().preemptions, preemptions);
  sim.RunAll();
}

// A newcomer's prompt is not starved behind long prompts of another caller
// that are still being prefilled: it ranks first for the step's budget.
TEST(SchedulerTest, NewcomerPrefillSharesTheBudgetWithRunningPrefills) {
  SchedulerOptions o = Opts(16, 8);
  o.prefill_chunk_tokens = 8;
  Sim sim(o, 512);
  sim.Add(TenantSeq(1, 1, 0.0, 200), 5);
  sim.Add(TenantSeq(2, 1, 0.001, 200), 5);
  sim.Step();  // both run, 8 prompt tokens each
  sim.Add(TenantSeq(3, 2, sim.now, 8), 2);
  auto out = sim.Step();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[0].id, 3);
  EXPECT_EQ(out.chunks[0].n_tokens, 8);
  EXPECT_TRUE(out.preempted.empty());
}

// With fair_share off (or one caller), a later request waits for a slot.
TEST(SchedulerTest, FairShareOffIsFcfs) {
  SchedulerOptions o = Opts(64, 4);
  o.fair_share = false;
  Sim sim(o, 256);
  for (int64_t id = 1; id <= 4; ++id) sim.Add(TenantSeq(id, 1, 0.001 * id), 50);
  sim.Step();
  sim.Add(TenantSeq(100, 2, sim.now), 2);
  auto out = sim.Step();
  EXPECT_TRUE(out.preempted.empty());
  sim.RunAll();
  EXPECT_EQ(sim.finish_order.back(), 100);
}

// A request of n samples holds n slots: a caller under its share does not
// take slots from a caller that would then hold fewer than it.
TEST(SchedulerTest, FairShareCountsSamples) {
  Sim sim(Opts(64, 8), 256);
  for (int64_t id = 1; id <= 8; ++id) sim.Add(TenantSeq(id, 1, 0.001 * id), 100);
  sim.Step();
  auto big = TenantSeq(100, 2, sim.now);
  big.num_seats = 6;  // would hold 6 of 8 while tenant 1 keeps 2: not fair
  sim.Add(std::move(big), 2);
  auto out = sim.Step();
  EXPECT_EQ(out.preempted.size(), 0u);
  auto small = TenantSeq(101, 3, sim.now);
  sim.Add(std::move(small), 2);
  out = sim.Step();
  EXPECT_EQ(out.preempted.size(), 1u);
}

}  // namespace
}  // namespace brisk
