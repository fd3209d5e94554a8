// Speculative decoding in the engine: per sequence, a drafter (drafter.h)
// and an online acceptance estimate; per engine, the measured step cost.
// Before each step, Propose() gives the scheduler a draft for every decoding
// sequence where the policy (spec_policy.h) says it pays; the scheduler
// places draft positions only in the budget and blocks left over; the
// output processor verifies them (rejection_sampler.h); Observe() learns
// from the step's verdicts and time.
//
// Which sequences speculate: those whose request allows it (per-request
// opt-out), that are past their first generated token, and that have no
// structured-output constraint (their grammar state would have to advance
// through the draft: not done yet, so they decode plainly). Nothing drafts
// while more than `max_batch` sequences run.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/drafter.h"
#include "engine/generation.h"
#include "engine/scheduler.h"
#include "engine/spec_policy.h"
#include "util/status.h"

namespace brisk {

struct SpeculativeOptions {
  enum class Method : uint8_t { kNone, kNgram };
  Method method = Method::kNone;
  int num_tokens = 4;      // most draft tokens per sequence per step
  int ngram_min = 1;       // prompt lookup: shortest match
  int ngram_max = 4;       // prompt lookup: longest match
  int max_batch = 8;       // no drafts while more sequences than this run
  double min_gain = 1.05;  // draft only when the policy expects this speedup
  // false: always draft num_tokens (within max_batch), whatever the
  // measured cost and acceptance say (for tests and for comparing with the
  // adaptive policy).
  bool adaptive = true;

  bool enabled() const { return method != Method::kNone && num_tokens > 0; }
  Status Validate() const;
};

const char* SpeculativeMethodName(SpeculativeOptions::Method m);

class Speculator {
 public:
  explicit Speculator(const SpeculativeOptions& options);

  const SpeculativeOptions& options() const { return opts_; }
  bool enabled() const { return opts_.enabled(); }

  // A sequence that may speculate (the engine calls it for eligible
  // requests and their forks); others never get drafts.
  void Track(int64_t seq_id);
  void Forget(int64_t seq_id);
  bool Tracks(int64_t seq_id) const { return seqs_.contains(seq_id); }

  // Drafts for the running, decoding sequences it tracks, set on the
  // scheduler for its next Schedule().
  void Propose(Scheduler& scheduler);
  // A step's verdicts (results of its chunks) and its forward time over
  // `batch_tokens` positions.
  void Observe(std::span<const ScheduledChunk> chunks, std::span<const SeqResult> results,
               int64_t batch_tokens, double forward_s, StepStats* stats);

 private:
  struct Seq {
    std::unique_ptr<Drafter> drafter;
    size_t fed = 0;  // tokens of the sequence the drafter has seen
    AcceptanceTracker acceptance;
  };

  SpeculativeOptions opts_;
  StepCostModel cost_;
  std::unordered_map<int64_t, Seq> seqs_;
  std::vector<int32_t> draft_;
};

}  // namespace brisk
