#include "engine/scheduler.h"

#include <algorithm>
#include <cassert>
#include <tuple>

namespace brisk {

Scheduler::Scheduler(const SchedulerOptions& options, KvBlockPool* pool)
    : opts_(options), pool_(pool), prefix_cache_(pool, options.block_size) {
  if (opts_.prefill_chunk_tokens <= 0) opts_.prefill_chunk_tokens = opts_.max_batch_tokens;
}

// ---- ordering ---------------------------------------------------------------

int Scheduler::EffectivePriority(const SeqState& s, double now_s) const {
  if (s.priority == Priority::kBatch && now_s - s.arrival_s >= opts_.aging_s) return 0;  // aged
  return static_cast<int>(s.priority);
}

// Slots the sequence's tenant holds with it running (0 without fair share):
// the same whether the sequence runs or waits, so preempting it or admitting
// it does not change its own rank.
int64_t Scheduler::SeatsIfRunning(const SeqState& s) const {
  if (!opts_.fair_share) return 0;
  const int64_t held = TenantSeats(s.tenant);
  return s.status == SeqStatus::kRunning ? held : held + s.num_seats;
}

bool Scheduler::Outranks(const SeqState& a, const SeqState& b, double now_s) const {
  return std::make_tuple(EffectivePriority(a, now_s), SeatsIfRunning(a), a.arrival_s, a.id) <
         std::make_tuple(EffectivePriority(b, now_s), SeatsIfRunning(b), b.arrival_s, b.id);
}

void Scheduler::SortByRank(std::vector<SeqState*>& v, double now_s) const {
  std::sort(v.begin(), v.end(),
            [&](const SeqState* a, const SeqState* b) { return Outranks(*a, *b, now_s); });
}

// ---- admission and bookkeeping ---------------------------------------------

Status Scheduler::Add(SeqState seq) {
  if (seq.tokens.empty() || seq.num_prompt <= 0 || seq.num_prompt > seq.num_tokens())
    return InvalidArgument("a sequence needs a non-empty prompt");
  if (seqs_.count(seq.id)) return InvalidArgument("sequence id {} is already queued", seq.id);
  if (PagesFor(seq.num_tokens()) > pool_->num_blocks())
    return InvalidArgument("{} tokens need {} KV pages but the cache holds {}", seq.num_tokens(),
                           PagesFor(seq.num_tokens()), pool_->num_blocks());
  if (seq.num_seats < 1 || seq.num_seats > opts_.max_concurrent_sequences)
    return InvalidArgument(
        "a request of {} samples can never run: at most {} sequences run at once", seq.num_seats,
        opts_.max_concurrent_sequences);
  const int p = static_cast<int>(seq.priority);
  // The bound is on new arrivals: preempted sequences waiting to resume do
  // not take a newcomer's place.
  const int32_t queued = NumQueued(seq.priority);
  if (queued + seq.num_seats > opts_.max_waiting[p])
    return ResourceExhausted("the {} queue is full ({} waiting)", PriorityName(seq.priority),
                             queued);
  seq.num_computed = 0;
  seq.blocks.clear();
  seq.block_hashes.clear();
  seq.external_hashes.clear();
  seq.num_published = 0;
  seq.num_cached_prompt = -1;
  seq.num_window_checked = 0;
  seq.status = SeqStatus::kWaiting;
  seq.num_preemptions = 0;
  seq.first_scheduled_s = -1;
  auto owned = std::make_unique<SeqState>(std::move(seq));
  waiting_.push_back(owned.get());
  ++num_waiting_[p];
  seqs_.emplace(owned->id, std::move(owned));
  return Status::Ok();
}

Status Scheduler::Fork(int64_t parent_id, int64_t child_id) {
  auto it = seqs_.find(parent_id);
  if (it == seqs_.end()) return NotFound("no sequence {}", parent_id);
  if (seqs_.count(child_id)) return InvalidArgument("sequence id {} is already queued", child_id);
  const SeqState& parent = *it->second;
  auto child = std::make_unique<SeqState>(parent);
  child->id = child_id;
  child->num_preemptions = 0;
  // The child takes one of the slots its parent held for it.
  child->num_seats = 1;
  if (it->second->num_seats > 1) {
    --it->second->num_seats;
    if (it->second->status == SeqStatus::kRunning) --tenant_seats_[parent.tenant];
  }
  for (int32_t b : child->blocks) pool_->Ref(b);
  if (child->status == SeqStatus::kRunning) {
    child->status = SeqStatus::kWaiting;  // JoinRunning sets it
    JoinRunning(*child);
  } else {
    waiting_.push_back(child.get());
    ++num_waiting_[static_cast<int>(child->priority)];
  }
  seqs_.emplace(child_id, std::move(child));
  return Status::Ok();
}

void Scheduler::JoinRunning(SeqState& s) {
  s.status = SeqStatus::kRunning;
  running_.push_back(&s);
  tenant_seats_[s.tenant] += s.num_seats;
}

void Scheduler::LeaveRunning(SeqState& s) {
  std::erase(running_, &s);
  auto it = tenant_seats_.find(s.tenant);
  if (it != tenant_seats_.end() && (it->second -= s.num_seats) <= 0) tenant_seats_.erase(it);
  s.status = SeqStatus::kWaiting;
}

int64_t Scheduler::TenantSeats(uint64_t tenant) const {
  auto it = tenant_seats_.find(tenant);
  return it == tenant_seats_.end() ? 0 : it->second;
}

void Scheduler::Free(SeqState& s) {
  pool_->ReleaseTable(s.blocks);
  s.blocks.clear();
  if (s.status == SeqStatus::kRunning) {
    LeaveRunning(s);
  } else if (s.status == SeqStatus::kWaiting) {
    std::erase(waiting_, &s);
    --num_waiting_[static_cast<int>(s.priority)];
  }
  s.status = SeqStatus::kFinished;
}

void Scheduler::Remove(int64_t id) { seqs_.erase(id); }

void Scheduler::Abort(int64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  Free(*it->second);
  Remove(id);
}

int32_t Scheduler::NumQueued(Priority p) const {
  int32_t n = 0;
  for (const SeqState* s : waiting_)
    if (s->priority == p && s->first_scheduled_s < 0) n += s->num_seats;
  return n;
}

int64_t Scheduler::RunningSeats() const {
  int64_t n = 0;
  for (const SeqState* s : running_) n += s->num_seats;
  return n;
}

const SeqState* Scheduler::Find(int64_t id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

// ---- KV allocation and preemption -----------------------------------------

// The lowest-ranked running sequence not in this step's batch that ranks
// below `for_seq`: whose KV blocks it may take.
SeqState* Scheduler::PickVictim(const SeqState& for_seq, double now_s,
                                const std::vector<SeqState*>& scheduled) {
  SeqState* victim = nullptr;
  for (SeqState* r : running_) {
    if (r == &for_seq || r->blocks.empty()) continue;
    if (std::find(scheduled.begin(), scheduled.end(), r) != scheduled.end()) continue;
    if (!Outranks(for_seq, *r, now_s)) continue;
    if (!victim || Outranks(*victim, *r, now_s)) victim = r;
  }
  return victim;
}

// Running sequences whose slots waiting `s` may take, freeing at least
// `seats_needed` slots, or none when that many cannot be freed (nothing is
// preempted for a sequence that would not be admitted). A lower priority
// always yields; within a priority only a tenant that would still hold at
// least as many slots as s's tenant with s (fair share), lowest rank first.
// Earlier arrivals of the same tenant wait for a slot instead (FCFS).
// `planned`: slots already promised this step to other waiting sequences.
std::vector<SeqState*> Scheduler::SlotVictims(const SeqState& s, int64_t seats_needed, double now_s,
                                              const std::vector<SeqState*>& scheduled,
                                              const TenantSeatMap& planned) const {
  TenantSeatMap seats = tenant_seats_;  // as they would be
  for (const auto& [tenant, n] : planned) seats[tenant] += n;
  const int ps = EffectivePriority(s, now_s);
  std::vector<SeqState*> candidates;
  for (SeqState* r : running_)
    if (r != &s && !r->blocks.empty() &&
        std::find(scheduled.begin(), scheduled.end(), r) == scheduled.end())
      candidates.push_back(r);
  std::vector<SeqState*> victims;
  int64_t freed = 0;
  while (freed < seats_needed) {
    const int64_t mine = seats[s.tenant] + s.num_seats;
    auto allowed = [&](const SeqState* r) {
      const int pr = EffectivePriority(*r, now_s);
      if (pr != ps) return pr > ps;
      return opts_.fair_share && r->tenant != s.tenant && seats[r->tenant] - r->num_seats >= mine;
    };
    auto lower = [&](const SeqState* a, const SeqState* b) {  // a ranks below b
      return std::make_tuple(EffectivePriority(*a, now_s), seats[a->tenant], a->arrival_s, a->id) >
             std::make_tuple(EffectivePriority(*b, now_s), seats[b->tenant], b->arrival_s, b->id);
    };
    auto best = candidates.end();
    for (auto it = candidates.begin(); it != candidates.end(); ++it)
      if (allowed(*it) && (best == candidates.end() || lower(*it, *best))) best = it;
    if (best == candidates.end()) return {};
    SeqState* v = *best;
    candidates.erase(best);
    victims.push_back(v);
    freed += v->num_seats;
    seats[v->tenant] -= v->num_seats;
  }
  return victims;
}

// A running sequence gives up its blocks (full ones stay in the prefix
// cache) and waits to be computed again.
void Scheduler::ReturnToWaiting(SeqState& s) {
  pool_->ReleaseTable(s.blocks);
  s.blocks.clear();
  s.num_computed = 0;
  s.num_published = 0;
  s.num_window_checked = 0;
  LeaveRunning(s);
  waiting_.push_back(&s);
  ++num_waiting_[static_cast<int>(s.priority)];
}

void Scheduler::Preempt(SeqState& s, SchedulerOutput& out) {
  ReturnToWaiting(s);
  ++s.num_preemptions;
  ++preemptions_;
  out.preempted.push_back(s.id);
}

// Gets blocks for the next n_new tokens of `s` (and a private copy of a
// shared block they would write into), preempting lower-ranked sequences.
bool Scheduler::AllocateOrPreempt(SeqState& s, int32_t n_new, double now_s, SchedulerOutput& out,
                                  const std::vector<SeqState*>& scheduled) {
  const int bs = opts_.block_size;
  const size_t write_block = static_cast<size_t>(s.num_computed / bs);
  const bool cow = write_block < s.blocks.size() && pool_->RefCount(s.blocks[write_block]) > 1;
  const int64_t need =
      BlocksFor(int64_t{s.num_computed} + n_new) - static_cast<int64_t>(s.blocks.size()) + cow;
  if (need <= 0) return true;
  std::vector<int32_t> got;
  while (!pool_->Allocate(need, &got)) {
    SeqState* victim = PickVictim(s, now_s, scheduled);
    if (!victim) return false;
    Preempt(*victim, out);
  }
  size_t k = 0;
  if (cow) {  // copy-on-write: the first divergent block
    const int32_t shared = s.blocks[write_block];
    out.block_copies.emplace_back(shared, got[k]);
    const auto from = pool_->Locals(shared), to = pool_->Locals(got[k]);
    for (size_t i = 0; i < from.size() && i < to.size(); ++i)
      out.block_copies.emplace_back(from[i], to[i]);
    s.blocks[write_block] = got[k++];
    pool_->Release(std::span<const int32_t>(&shared, 1));
  }
  s.blocks.insert(s.blocks.end(), got.begin() + k, got.end());
  return true;
}

bool Scheduler::ScheduleChunk(SeqState& s, int budget, double now_s, SchedulerOutput& out,
                              std::vector<SeqState*>& scheduled) {
  const int32_t pending = s.num_tokens() - s.num_computed;
  const int32_t chunk = std::min({pending, budget, opts_.prefill_chunk_tokens});
  if (chunk <= 0) return false;
  if (!AllocateOrPreempt(s, chunk, now_s, out, scheduled)) return false;
  ScheduledChunk c;
  c.id = s.id;
  c.pos_begin = s.num_computed;
  c.n_tokens = chunk;
  c.sample = s.num_computed + chunk == s.num_tokens();
  out.chunks.push_back(c);
  (pending == 1 ? out.num_decode_tokens : out.num_prefill_tokens) += chunk;
  if (s.first_scheduled_s < 0) s.first_scheduled_s = last_now_s_;
  scheduled.push_back(&s);
  return true;
}

// ---- one step ------------------------------------------------------------------

// Waiting sequences that may take a running slot (a higher effective
// priority, or a tenant under its fair share) take it and the KV blocks for
// their first chunk now, before the running ones are scheduled for this step.
// Stops once the waiting sequences served this way would fill the step's
// token budget.
void Scheduler::MakeRoom(double now_s, SchedulerOutput& out) {
  SortByRank(waiting_, now_s);
  const std::vector<SeqState*> snapshot = waiting_;
  const std::vector<SeqState*> none;
  int64_t slots = 0, blocks = 0, tokens = 0;
  TenantSeatMap planned;
  for (SeqState* s : snapshot) {
    if (tokens >= opts_.max_batch_tokens) break;
    if (s->status != SeqStatus::kWaiting) continue;
    const int32_t chunk =
        std::min({s->num_tokens(), opts_.prefill_chunk_tokens, opts_.max_batch_tokens});
    slots += s->num_seats;
    blocks += BlocksFor(chunk);
    tokens += chunk;
    const int64_t over = RunningSeats() + slots - opts_.max_concurrent_sequences;
    if (over > 0) {
      const auto victims = SlotVictims(*s, over, now_s, none, planned);
      if (victims.empty()) return;
      for (SeqState* v : victims) Preempt(*v, out);
    }
    while (pool_->num_free() < pool_->PagesFor(blocks)) {
      const auto victims = SlotVictims(*s, 1, now_s, none, planned);
      if (victims.empty()) return;
      Preempt(*victims[0], out);
    }
    planned[s->tenant] += s->num_seats;
  }
}

// A waiting sequence joins the running set with its first chunk, or goes
// back to waiting (false) when there is no slot or no KV room for it.
bool Scheduler::TryAdmit(SeqState& s, int budget, double now_s, SchedulerOutput& out,
                         std::vector<SeqState*>& scheduled) {
  const int64_t over = RunningSeats() + s.num_seats - opts_.max_concurrent_sequences;
  if (over > 0) {
    const auto victims = SlotVictims(s, over, now_s, scheduled);
    if (victims.empty()) return false;
    for (SeqState* v : victims) Preempt(*v, out);
  }
  AdmitFromPrefixCache(s);
  // Join the running set first so ScheduleChunk's bookkeeping sees it.
  std::erase(waiting_, &s);
  --num_waiting_[static_cast<int>(s.priority)];
  JoinRunning(s);
  if (ScheduleChunk(s, budget, now_s, out, scheduled)) return true;
  ReturnToWaiting(s);  // no room: back to waiting, giving up any cached blocks it took
  return false;
}

// Decodes of running sequences first; then prefill chunks of running
// sequences and admissions share the rest of the budget in rank order. A
// waiting sequence that cannot be admitted stops admission (FCFS: nothing
// ranked below it jumps ahead); running sequences still get their chunks.
void Scheduler::ScheduleContinuous(double now_s, SchedulerOutput& out) {
  std::vector<SeqState*> scheduled;
  int budget = opts_.max_batch_tokens;
  MakeRoom(now_s, out);

  SortByRank(running_, now_s);
  std::vector<SeqState*> prefills;
  for (SeqState* s : std::vector<SeqState*>(running_)) {
    if (s->status != SeqStatus::kRunning) continue;  // preempted in this loop
    if (s->num_tokens() - s->num_computed != 1) {
      prefills.push_back(s);
      continue;
    }
    if (budget <= 0) break;
    if (ScheduleChunk(*s, budget, now_s, out, scheduled)) budget -= out.chunks.back().n_tokens;
  }

  // Waiting ones are ranked as they are now, before any of them joins.
  std::vector<SeqState*> candidates = prefills;
  candidates.insert(candidates.end(), waiting_.begin(), waiting_.end());
  SortByRank(candidates, now_s);
  std::vector<SeqStatus> was;
  for (const SeqState* s : candidates) was.push_back(s->status);
  bool admitting = true;
  for (size_t i = 0; i < candidates.size() && budget > 0; ++i) {
    SeqState& s = *candidates[i];
    if (s.status != was[i]) continue;  // preempted (or admitted) in this loop
    if (s.status == SeqStatus::kRunning) {
      if (ScheduleChunk(s, budget, now_s, out, scheduled)) budget -= out.chunks.back().n_tokens;
    } else if (admitting) {
      if (TryAdmit(s, budget, now_s, out, scheduled))
        budget -= out.chunks.back().n_tokens;
      else
        admitting = false;
    }
  }
  AttachDrafts(budget, out);
}

// Static batching admits only when the previous batch is done, and then
// forms the whole batch at once (up to max_concurrent_sequences): members
// whose prompts do not fit this step's budget join the batch now and prefill
// in the next steps, so a batch is not cut to one step's tokens.
void Scheduler::ScheduleStatic(double now_s, SchedulerOutput& out) {
  std::vector<SeqState*> scheduled;
  int budget = opts_.max_batch_tokens;
  SortByRank(running_, now_s);
  for (int pass = 0; pass < 2; ++pass) {
    for (SeqState* s : std::vector<SeqState*>(running_)) {
      if (budget <= 0) break;
      if (s->status != SeqStatus::kRunning) continue;  // preempted in this loop
      const bool decode = s->num_tokens() - s->num_computed == 1;
      if ((pass == 0) != decode) continue;
      if (ScheduleChunk(*s, budget, now_s, out, scheduled)) budget -= out.chunks.back().n_tokens;
    }
  }
  if (!running_.empty()) return;
  SortByRank(waiting_, now_s);
  for (SeqState* s : std::vector<SeqState*>(waiting_)) {
    if (s->status != SeqStatus::kWaiting) continue;
    if (RunningSeats() + s->num_seats > opts_.max_concurrent_sequences) break;
    if (budget <= 0) {
      std::erase(waiting_, s);
      --num_waiting_[static_cast<int>(s->priority)];
      JoinRunning(*s);
      continue;
    }
    if (!TryAdmit(*s, budget, now_s, out, scheduled)) break;
    budget -= out.chunks.back().n_tokens;
  }
}

SchedulerOutput Scheduler::Schedule(double now_s) {
  last_now_s_ = now_s;
  ++steps_;
  SchedulerOutput out;

  // Deadlines fire in any state; blocks are freed now.
  std::vector<int64_t> expired;
  for (auto& [id, s] : seqs_)
    if (s->deadline_s <= now_s) expired.push_back(id);
  std::sort(expired.begin(), expired.end());
  for (int64_t id : expired) Abort(id);
  out.expired = std::move(expired);

  if (opts_.continuous_batching)
    ScheduleContinuous(now_s, out);
  else
    ScheduleStatic(now_s, out);
  for (auto& [id, st] : seqs_) st->draft.clear();  // a draft is for one step only
  return out;
}

void Scheduler::UpdateFromOutput(const SchedulerOutput& out, std::span<const SeqResult> results) {
  for (const ScheduledChunk& c : out.chunks) {
    auto it = seqs_.find(c.id);
    if (it == seqs_.end()) continue;
    it->second->num_computed = c.pos_begin + c.n_tokens;
  }
  for (const SeqResult& r : results) {
    auto it = seqs_.find(r.id);
    if (it == seqs_.end()) continue;
    SeqState& s = *it->second;
    for (const auto& [child, token] : r.forks) {
      if (!Fork(r.id, child).ok()) continue;
      seqs_[child]->tokens.push_back(token);
    }
    if (r.accepted_draft > 0) AcceptDraft(s, out, r.accepted_draft);
    if (r.token >= 0) s.tokens.push_back(r.token);
    if (r.finished) {
      finished_log_.emplace_back(last_now_s_, s.num_generated());
      PublishComputed(s);  // its last chunk's blocks, before they are released
      Free(s);
      Remove(r.id);
    }
  }
  for (const ScheduledChunk& c : out.chunks) {
    auto it = seqs_.find(c.id);
    if (it == seqs_.end()) continue;
    if (!c.draft.empty()) ReleaseUnusedBlocks(*it->second);
    PublishComputed(*it->second);
    if (WindowPaging()) DropOutOfWindow(*it->second);
  }
  while (!finished_log_.empty() && finished_log_.front().first < last_now_s_ - 300)
    finished_log_.pop_front();
  RecordWaste();
}

void Scheduler::RecordWaste() {
  int64_t slots = 0, held = 0;
  for (const SeqState* s : running_) {
    slots += static_cast<int64_t>(s->blocks.size()) * opts_.block_size;
    held += std::min<int64_t>(s->num_computed,
                              static_cast<int64_t>(s->blocks.size()) * opts_.block_size);
  }
  if (slots == 0) return;
  waste_sum_ += double(slots - held) / double(slots);
  ++waste_samples_;
}

// ---- stats ---------------------------------------------------------------------

SchedulerStats Scheduler::stats() const {
  SchedulerStats st;
  for (const SeqState* s : running_) ++st.running[static_cast<int>(s->priority)];
  for (int p = 0; p < kNumPriorities; ++p) {
    st.waiting[p] = num_waiting_[p];
    st.queued[p] = NumQueued(static_cast<Priority>(p));
  }
  st.blocks_total = pool_->num_blocks();
  st.blocks_used = pool_->num_used();
  st.blocks_cached = prefix_cache_.num_cached();
  st.preemptions = preemptions_;
  st.prefix_query_tokens = prefix_query_tokens_;
  st.prefix_hit_tokens = prefix_hit_tokens_;
  st.prefix_disk_hit_tokens = prefix_disk_hit_tokens_;
  st.prefix_ram_hit_tokens = prefix_hit_tokens_ - prefix_disk_hit_tokens_;
  st.prefix_ram_hit_blocks = prefix_ram_hit_blocks_;
  st.prefix_disk_hit_blocks = prefix_disk_hit_blocks_;
  st.steps = steps_;
  st.kv_waste_ratio = waste_samples_ ? waste_sum_ / double(waste_samples_) : 0;
  return st;
}

double Scheduler::FinishedPerSecond(double now_s, double window_s) const {
  int64_t n = 0;
  double oldest = now_s;
  for (auto it = finished_log_.rbegin(); it != finished_log_.rend(); ++it) {
    if (it->first < now_s - window_s) break;
    ++n;
    oldest = it->first;
  }
  if (n == 0) return 0;
  return double(n) / std::max(1.0, now_s - oldest);
}

double Scheduler::TokensPerSecond(double now_s, double window_s) const {
  int64_t n = 0;
  double oldest = now_s;
  for (auto it = finished_log_.rbegin(); it != finished_log_.rend(); ++it) {
    if (it->first < now_s - window_s) break;
    n += it->second;
    oldest = it->first;
  }
  if (n == 0) return 0;
  return double(n) / std::max(1.0, now_s - oldest);
}

}  // namespace brisk
