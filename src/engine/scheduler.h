// The scheduler: pure logic over plain state (no model, no threads, no
// clock of its own; `now_s` is passed in). One engine step is
//
//   SchedulerOutput out = scheduler.Schedule(now_s);   // who runs, how many tokens
//   ... copy blocks, forward pass, sample ...
//   scheduler.UpdateFromOutput(out, results);          // computed += n, new tokens
//
// Every sequence knows its tokens (prompt + generated) and how many of them
// have K/V in the cache (num_computed). There is no prefill phase: a
// sequence whose computed count lags its known count by more than one token
// gets a chunk; by exactly one, a decode token. Decodes are scheduled first,
// then prefill chunks fill the token budget, so a long prompt arriving never
// stalls the streams already running.
//
// Policies, each a small named function in scheduler.cc:
//  - order: interactive before batch; within a priority, the sequence whose
//    tenant would hold fewer running slots first (fair share), then FCFS
//    (arrival); a batch sequence waiting longer than aging_s ranks as
//    interactive;
//  - admission: bounded waiting queue per priority; waiting sequences join
//    when the token budget, the running-set cap and KV blocks allow. Decodes
//    come first; prefill chunks of running sequences and newcomers then share
//    the rest of the token budget in one rank order, so a newcomer is not
//    starved behind long prompts already running;
//  - fair share: a waiting sequence of a tenant holding fewer running slots
//    than another tenant of the same priority takes a slot from it (the
//    other tenant's lowest-ranked running sequence is preempted), until the
//    tenants hold equal shares. One tenant (every request from the same
//    caller) is plain FCFS;
//  - KV exhaustion: allocation fails without side effects and the lowest
//    ranked running sequence not yet in this step (lowest priority, latest
//    arrival) is preempted: its blocks go back to the pool (kept in the
//    prefix cache when full) and it recomputes later;
//  - copy-on-write: a block shared by several sequences (n > 1 forks) is
//    copied before one of them writes into it;
//  - prefix cache (engine/prefix_cache.h): on admission the longest run of
//    cached full blocks is reused and computing starts after it; blocks are
//    published to the cache as their K/V are computed. With a tier under the
//    cache (SetKvTier: the disk tier), the blocks after the RAM hit that the
//    tier holds are read into free blocks and published before the step is
//    built (a tier read never preempts anyone; a failed read ends the run
//    there and the rest is computed);
//  - sliding window (sliding_window > 0, the pool pages local layers
//    separately: kv_block_pool.h): a block that has left a sequence's
//    window drops its local pages when the sequence is its only holder; a
//    prefix-cache hit is cut back to where the local layers still hold the
//    window before it (scheduler_window.cc);
//  - static batching (continuous_batching = false): a batch is admitted only
//    when nothing runs, and runs until its longest member finishes. Kept as
//    the baseline continuous batching is measured against.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/kv_block_pool.h"
#include "engine/kv_events.h"
#include "engine/kv_tier.h"
#include "engine/prefix_cache.h"
#include "engine/priority.h"
#include "engine/scheduler_options.h"
#include "util/status.h"

namespace brisk {

enum class SeqStatus : uint8_t { kWaiting, kRunning, kFinished };

// Why the scheduler ended a sequence on its own (the engine ends the rest).
enum class SchedFinish : uint8_t { kNone, kDeadline };

// One sequence: plain data, read by the engine to build the batch.
struct SeqState {
  int64_t id = 0;
  Priority priority = Priority::kInteractive;
  uint64_t tenant = 0;  // fair-share group: who sent it (engine: hash of the caller)
  double arrival_s = 0;
  double deadline_s = std::numeric_limits<double>::infinity();
  std::vector<int32_t> tokens;  // known: prompt + generated
  int32_t num_prompt = 0;
  // Running-set slots this sequence holds: itself plus the samples still to
  // fork from it (n - 1 until its prompt is computed). Admission, the
  // max_concurrent_sequences cap and the waiting-queue bound count slots, so
  // forks never take the running set over its cap.
  int32_t num_seats = 1;
  int32_t num_computed = 0;  // tokens whose K/V are in the cache
  std::vector<int32_t> blocks;
  BlockHash salt;                       // root of the block-hash chain
  std::vector<BlockHash> block_hashes;  // of full blocks of `tokens`
  // KV events only (Scheduler::EnableKvEvents): the cache salt as text and
  // vLLM's hashes of the same blocks (engine/kv_events.h).
  std::string salt_text;
  std::vector<ExternalBlockHash> external_hashes;
  int32_t num_published = 0;       // blocks published to the prefix cache
  int32_t num_cached_prompt = -1;  // prompt tokens found cached at first admission
  int32_t num_window_checked = 0;  // leading blocks already past the sliding window
  SeqStatus status = SeqStatus::kWaiting;
  int32_t num_preemptions = 0;
  double first_scheduled_s = -1;
  // Speculative decoding: tokens a drafter proposes after the last known one
  // (Scheduler::SetDraft), verified as extra positions of the next decode
  // step when its token budget and free KV blocks allow. Consumed by the
  // next Schedule().
  std::vector<int32_t> draft;

  int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t num_generated() const { return num_tokens() - num_prompt; }
};

struct ScheduledChunk {
  int64_t id = 0;
  int32_t pos_begin = 0;  // = num_computed before the step
  int32_t n_tokens = 0;
  bool sample = false;  // the chunk reaches the last known token: sample one
  // Speculative decoding (decode chunks only): draft tokens computed after
  // the chunk's n_tokens known ones, at positions pos_begin + n_tokens + i.
  // Their logits are verified; the K/V of rejected ones is never counted as
  // computed and is overwritten later.
  std::vector<int32_t> draft;
  int32_t num_positions() const { return n_tokens + static_cast<int32_t>(draft.size()); }
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;  // decodes first, then prefill chunks
  std::vector<std::pair<int32_t, int32_t>>
      block_copies;  // (src, dst), apply before the forward pass
  std::vector<int64_t> preempted;
  std::vector<int64_t> expired;  // deadline passed: already finished and freed
  int32_t num_decode_tokens = 0;
  int32_t num_prefill_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

// What the engine did with one scheduled chunk.
struct SeqResult {
  int64_t id = 0;
  int32_t token = -1;     // sampled token, appended to the sequence (-1: none)
  bool finished = false;  // the engine ended it (stop, length, error): free it
  // n > 1: new sequences forked from this one after its chunk was computed
  // and before `token` is appended, each with its own first token.
  std::vector<std::pair<int64_t, int32_t>> forks;
  // Speculative decoding: the first `accepted_draft` tokens of the chunk's
  // draft were accepted; they are appended (and their K/V counted as
  // computed) before `token`. A sequence that finished on one of them has
  // token -1.
  int32_t accepted_draft = 0;
};

struct SchedulerStats {
  int32_t running[kNumPriorities] = {0, 0};
  int32_t waiting[kNumPriorities] = {0, 0};  // incl. preempted ones waiting to resume
  int32_t queued[kNumPriorities] = {0, 0};   // waiting and never scheduled (what the bound counts)
  int64_t blocks_total = 0, blocks_used = 0, blocks_cached = 0;
  int64_t preemptions = 0;
  int64_t prefix_query_tokens = 0, prefix_hit_tokens = 0;
  // By tier (ram: the prefix cache, disk: the tier under it): prompt tokens
  // found at a sequence's first admission (ram + disk = prefix_hit_tokens),
  // and blocks reused at every admission (a preempted sequence again).
  int64_t prefix_ram_hit_tokens = 0, prefix_disk_hit_tokens = 0;
  int64_t prefix_ram_hit_blocks = 0, prefix_disk_hit_blocks = 0;
  int64_t steps = 0;
  // Allocated token slots not holding a token, averaged over steps.
  double kv_waste_ratio = 0;
};

class Scheduler {
 public:
  // The pool must outlive the scheduler, whose prefix cache keeps the pool's
  // free cached blocks.
  Scheduler(const SchedulerOptions& options, KvBlockPool* pool);

  const SchedulerOptions& options() const { return opts_; }
  const PrefixCache& prefix_cache() const { return prefix_cache_; }
  // From now on the prefix cache's changes go to `log` as KV events, with
  // block hashes from `hasher`; both must outlive the scheduler.
  void EnableKvEvents(KvEventLog* log, const ExternalBlockHasher* hasher);
  // A tier under the prefix cache (engine/kv_tier.h), outliving the
  // scheduler; nullptr: none.
  void SetKvTier(KvTier* tier);

  // Queues a sequence (tokens, num_prompt, priority, arrival_s, deadline_s
  // and salt set by the caller; the rest is reset). ResourceExhausted when
  // the waiting queue of its priority is full; InvalidArgument when it could
  // never fit in the KV pool.
  Status Add(SeqState seq);
  // Ends a sequence in any state (cancel, error); its blocks are freed now.
  // Unknown ids are ignored.
  void Abort(int64_t id);
  // A new sequence that shares everything `parent` has so far (n > 1). The
  // shared partial block is copied on the first write. (The engine forks
  // through SeqResult::forks, right after the prompt is computed.)
  Status Fork(int64_t parent, int64_t child);
  // Proposes draft tokens for a running sequence's next decode step (see
  // SeqState::draft). Drafts never preempt anyone and never take budget from
  // another sequence's decode: they are cut to what is left. Unknown ids
  // are ignored.
  void SetDraft(int64_t id, std::vector<int32_t> draft);

  SchedulerOutput Schedule(double now_s);
  // Applies a step's results: computed counts, new tokens, finishes.
  void UpdateFromOutput(const SchedulerOutput& out, std::span<const SeqResult> results);

  const SeqState* Find(int64_t id) const;
  // Waiting sequences of priority p that were never scheduled.
  int32_t NumQueued(Priority p) const;
  // Running slots the tenant's sequences hold now.
  int64_t TenantSeats(uint64_t tenant) const;
  bool HasWork() const { return !seqs_.empty(); }
  int64_t num_seqs() const { return static_cast<int64_t>(seqs_.size()); }
  SchedulerStats stats() const;
  // Requests that finished in the last `window_s` seconds per second, and
  // the generated tokens per second over the same window.
  double FinishedPerSecond(double now_s, double window_s = 30) const;
  double TokensPerSecond(double now_s, double window_s = 30) const;
  // Blocks a request of this many tokens needs at most.
  int64_t BlocksFor(int64_t n_tokens) const {
    return (n_tokens + opts_.block_size - 1) / opts_.block_size;
  }
  // Pool pages a sequence of this many tokens holds at most: its blocks,
  // and their local pages for at most the window and one chunk.
  int64_t PagesFor(int64_t n_tokens) const;

 private:
  bool Outranks(const SeqState& a, const SeqState& b, double now_s) const;
  int64_t SeatsIfRunning(const SeqState& s) const;
  int64_t RunningSeats() const;
  void JoinRunning(SeqState& s);
  void LeaveRunning(SeqState& s);
  void ScheduleContinuous(double now_s, SchedulerOutput& out);
  void ScheduleStatic(double now_s, SchedulerOutput& out);
  void AttachDrafts(int budget, SchedulerOutput& out);
  void AcceptDraft(SeqState& s, const SchedulerOutput& out, int32_t accepted);
  void ReleaseUnusedBlocks(SeqState& s);
  bool WindowPaging() const { return opts_.sliding_window > 0 && pool_->locals_per_block() > 0; }
  void DropOutOfWindow(SeqState& s);
  int32_t WindowedHits(const SeqState& s, int32_t hits) const;
  bool TryAdmit(SeqState& s, int budget, double now_s, SchedulerOutput& out,
                std::vector<SeqState*>& scheduled);
  int EffectivePriority(const SeqState& s, double now_s) const;
  void SortByRank(std::vector<SeqState*>& v, double now_s) const;
  bool ScheduleChunk(SeqState& s, int budget, double now_s, SchedulerOutput& out,
                     std::vector<SeqState*>& scheduled);
  bool AllocateOrPreempt(SeqState& s, int32_t n_new, double now_s, SchedulerOutput& out,
                         const std::vector<SeqState*>& scheduled);
  SeqState* PickVictim(const SeqState& for_seq, double now_s,
                       const std::vector<SeqState*>& scheduled);
  using TenantSeatMap = std::unordered_map<uint64_t, int64_t>;
  std::vector<SeqState*> SlotVictims(const SeqState& s, int64_t seats_needed, double now_s,
                                     const std::vector<SeqState*>& scheduled,
                                     const TenantSeatMap& planned = {}) const;
  void ReturnToWaiting(SeqState& s);
  void Preempt(SeqState& s, SchedulerOutput& out);
  void MakeRoom(double now_s, SchedulerOutput& out);
  void AdmitFromPrefixCache(SeqState& s);
  int32_t LoadFromTier(SeqState& s, size_t from, size_t to);
  void PublishComputed(SeqState& s);
  void RecordStored(SeqState& s, int32_t i);
  void Free(SeqState& s);
  void Remove(int64_t id);
  void RecordWaste();

  SchedulerOptions opts_;
  KvBlockPool* pool_;
  PrefixCache prefix_cache_;
  KvEventLog* events_ = nullptr;
  KvTier* tier_ = nullptr;
  const ExternalBlockHasher* external_hasher_ = nullptr;
  std::unordered_map<int64_t, std::unique_ptr<SeqState>> seqs_;
  std::vector<SeqState*> running_;
  std::vector<SeqState*> waiting_;
  TenantSeatMap tenant_seats_;  // running slots per tenant
  int32_t num_waiting_[kNumPriorities] = {0, 0};
  int64_t preemptions_ = 0;
  int64_t prefix_query_tokens_ = 0, prefix_hit_tokens_ = 0;
  int64_t prefix_disk_hit_tokens_ = 0;
  int64_t prefix_ram_hit_blocks_ = 0, prefix_disk_hit_blocks_ = 0;
  int64_t steps_ = 0;
  double waste_sum_ = 0;
  int64_t waste_samples_ = 0;
  std::deque<std::pair<double, int32_t>> finished_log_;  // (time, generated tokens)
  double last_now_s_ = 0;
};

}  // namespace brisk
