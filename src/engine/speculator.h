// Speculative decoding in the engine: per sequence, a drafter (drafter.h)
// and an online acceptance estimate; per engine, the measured step cost.
// Before each step, Propose() gives the scheduler a draft for every decoding
// sequence where the policy (spec_policy.h) says it pays; the scheduler
// places draft positions only in the budget and blocks left over; the
// output processor verifies them (rejection_sampler.h); Observe() learns
// from the step's verdicts and time.
//
// Drafters: prompt lookup (NgramDrafter, per sequence) or a draft model
// (DraftModelRunner, batched over the sequences that draft in a step; its
// forward time counts in the policy as the cost of each draft token).
//
// A draft model has to read a sequence's prompt before it can draft for it
// (its catch-up). It does so while the target prefills the prompt, so the
// first decode steps draft at once instead of spending the draft's prefill
// in decode steps (where it stalled every sequence of the batch), and its
// prefix cache spares the prompt parts it has read before. The catch-up is
// paid once per sequence, so the policy weighs it against what drafting is
// expected to save over the rest of the answer (CatchUpPays): the prompt
// tokens still to read at the draft's measured prefill speed, against the
// seconds a draft saves per token times the tokens expected (max_tokens
// left, capped by the mean length of the answers that ended before). A
// sequence whose catch-up does not pay decodes plainly. Until enough drafts
// were verified, and for one sequence in kProbeEvery, it reads the prompt
// anyway: acceptance is measured only where the draft drafts.
//
// Which sequences speculate: those whose request allows it (per-request
// opt-out), that are past their first generated token, and that have no
// lazy constraint (tool_choice "auto": the grammar starts at a trigger in
// the text, which a draft would have to cross; they decode plainly).
// Structured-output constraints speculate: the drafter proposes without the
// grammar, verification masks each row by the grammar state after the
// drafts before it (output_processor_spec.cc). Nothing drafts while more
// than `max_batch` sequences run.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/draft_model.h"
#include "engine/drafter.h"
#include "engine/generation.h"
#include "engine/scheduler.h"
#include "engine/spec_policy.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

struct SpeculativeOptions {
  enum class Method : uint8_t { kNone, kNgram, kDraftModel };
  Method method = Method::kNone;
  // kDraftModel: the draft (not owned; same vocabulary as the target, see
  // CheckDraftVocab). Its KV cache holds as many blocks as the target's.
  Model* draft_model = nullptr;
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

// The share of a token's multiply-adds outside the output layer: what a
// prefill position (no logits row) costs relative to a decode position. 0.79
// for SmolLM2-135M (a 49k vocabulary), 0.37 for Gemma 3 270M (262k).
double PrefillTokenWeight(const ModelConfig& cfg);

class Speculator {
 public:
  // `target_weight_bytes`: the target's weights read per token, for the
  // draft model's cost before it is measured; `kv_blocks`, `block_size`: the
  // target's KV pool, which the draft's matches in blocks.
  // `prefix_cache`: the draft model may reuse its KV blocks across
  // sequences (as the target's prefix cache; off when that is off).
  // `prefill_weight`: what a prefill position costs in a step relative to a
  // decode or verify position, which also computes a logits row (the share
  // of a token's work outside the output layer; PrefillTokenWeight), for
  // the step-cost model (StepCostModel), so that prefill-heavy steps do not
  // teach the policy that verify positions are cheap.
  Speculator(const SpeculativeOptions& options, int64_t target_weight_bytes = 0,
             int64_t kv_blocks = 0, int block_size = 16, bool prefix_cache = true,
             double prefill_weight = 1.0);

  const SpeculativeOptions& options() const { return opts_; }
  bool enabled() const { return opts_.enabled(); }

  // A sequence that may speculate (the engine calls it for eligible
  // requests and their forks); others never get drafts. `max_tokens`: the
  // most tokens it may generate (what a draft catch-up can pay off over).
  void Track(int64_t seq_id, int32_t max_tokens = std::numeric_limits<int32_t>::max());
  // A fork of a tracked sequence (n > 1) speculates like its parent.
  void TrackFork(int64_t parent, int64_t child);
  void Forget(int64_t seq_id);
  bool Tracks(int64_t seq_id) const { return seqs_.contains(seq_id); }
  // Method draft: the draft model's runner (its KV pool, its sequences).
  const DraftModelRunner* draft_model() const { return draft_model_.get(); }

  // Drafts for the running, decoding sequences it tracks, set on the
  // scheduler for its next Schedule(). `trim` (optional) may shorten a
  // sequence's draft first (structured output: up to the first token its
  // grammar rules out, OutputProcessor::TrimDraft).
  using DraftTrim = std::function<void(int64_t seq_id, std::vector<int32_t>* draft)>;
  void Propose(Scheduler& scheduler, ThreadPool& pool, const DraftTrim& trim = {});
  // After Schedule: a draft model reads the prompt chunks the target
  // computes this step (of the sequences whose catch-up pays), so it can
  // draft from their first decode step.
  void CatchUp(std::span<const ScheduledChunk> chunks, const Scheduler& scheduler,
               ThreadPool& pool);
  // A step's verdicts (results of its chunks) and its time over its decode
  // and verify positions and its prefill positions: the forward pass and the
  // output processing (a verified position costs a logits row and its
  // sampling; with a large vocabulary that is not small).
  void Observe(std::span<const ScheduledChunk> chunks, std::span<const SeqResult> results,
               int64_t decode_tokens, int64_t prefill_tokens, double step_s, StepStats* stats);

 private:
  struct Seq {
    std::unique_ptr<Drafter> drafter;
    size_t fed = 0;  // tokens of the sequence the drafter has seen
    AcceptanceTracker acceptance;
    int since_draft = 0;  // eligible steps since its last draft
    int32_t max_tokens = std::numeric_limits<int32_t>::max();
    int32_t generated = 0;  // as of the last Propose
  };

  // A sequence the policy has not let draft for this many eligible steps
  // drafts one token anyway: its acceptance estimate would otherwise stay at
  // the prior forever (a drafter that would pay is never found out).
  static constexpr int kProbeEvery = 16;
  // Where no draft would pay even if every token were accepted, a sequence
  // probes kProbeRarely times less often.
  static constexpr int kProbeRarely = 8;
  // Draft tokens verified before the policy trusts the measured acceptance
  // enough to skip a prompt catch-up that does not pay.
  static constexpr int64_t kExploreVerdicts = 64;
  // Seconds each draft token adds to a step that drafts for `batch`
  // sequences (0 for prompt lookup).
  double DraftSecondsPerToken(size_t batch) const;
  // Seconds the draft model takes to read `tokens` prompt tokens in one go.
  double DraftPrefillSeconds(size_t tokens) const;
  // Whether the draft model's catch-up on `st` pays for itself (the class
  // comment). `draft_s`: DraftSecondsPerToken at this step's batch.
  bool CatchUpPays(const SeqState& st, const Seq& s, size_t batch, double draft_s) const;

  SpeculativeOptions opts_;
  const int64_t target_weight_bytes_;
  // Acceptance over every sequence: a new sequence starts from it (a draft
  // model's acceptance is mostly a property of the model pair, and a short
  // answer would end before its own estimate left a fixed prior).
  AcceptanceTracker overall_{0.5, 4, 0.98};
  // Mean output length of the sequences that ended (EWMA), 0: none yet.
  double mean_output_ = 0;
  int64_t verdicts_ = 0;  // draft tokens that faced a verdict, in all
  StepCostModel cost_;
  std::unordered_map<int64_t, Seq> seqs_;
  std::vector<int32_t> draft_;
  std::unique_ptr<DraftModelRunner> draft_model_;
  std::vector<DraftModelRunner::Request> requests_;
  // This step's Propose, for Observe's stats.
  int32_t eligible_ = 0;
  double draft_s_ = 0;
  // The draft's catch-up and prefix-cache totals at the last Observe.
  int64_t reported_catch_up_ = 0, reported_cached_ = 0;
};

}  // namespace brisk
