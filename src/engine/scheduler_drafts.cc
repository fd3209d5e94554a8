// The scheduler's part in speculative decoding (scheduler.h): draft tokens
// as extra positions of a decode chunk, and what happens to them after the
// step (accepted ones computed, blocks of rejected ones given back).
#include <algorithm>

#include "engine/scheduler.h"

namespace brisk {

void Scheduler::SetDraft(int64_t id, std::vector<int32_t> draft) {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || it->second->status != SeqStatus::kRunning) return;
  it->second->draft = std::move(draft);
}

// Speculative drafts go last: every decode and prefill chunk of this step is
// already placed, so drafts only use the budget and free blocks left over.
void Scheduler::AttachDrafts(int budget, SchedulerOutput& out) {
  for (ScheduledChunk& c : out.chunks) {
    if (budget <= 0) break;
    auto it = seqs_.find(c.id);
    if (it == seqs_.end()) continue;
    SeqState& s = *it->second;
    if (s.draft.empty() || !c.sample || c.n_tokens != 1) continue;  // decodes only
    int32_t k = std::min<int32_t>(static_cast<int32_t>(s.draft.size()), budget);
    // The draft positions must stay inside the sequence's own limit: the
    // caller passes at most what the sequence may still generate.
    const int64_t have = static_cast<int64_t>(s.blocks.size());
    const int64_t extra = BlocksFor(int64_t{c.pos_begin} + c.n_tokens + k) - have;
    if (extra > 0) {
      std::vector<int32_t> got;
      const int64_t can = std::min<int64_t>(extra, pool_->num_free() / pool_->PagesFor(1));
      if (can > 0 && pool_->Allocate(can, &got))
        s.blocks.insert(s.blocks.end(), got.begin(), got.end());
      const int64_t room =
          static_cast<int64_t>(s.blocks.size()) * opts_.block_size - c.pos_begin - c.n_tokens;
      k = static_cast<int32_t>(std::clamp<int64_t>(room, 0, k));
    }
    c.draft.assign(s.draft.begin(), s.draft.begin() + k);
    budget -= k;
    out.num_decode_tokens += k;
  }
}

void Scheduler::AcceptDraft(SeqState& s, const SchedulerOutput& out, int32_t accepted) {
  for (const ScheduledChunk& c : out.chunks) {
    if (c.id != s.id) continue;
    accepted = std::min<int32_t>(accepted, static_cast<int32_t>(c.draft.size()));
    s.tokens.insert(s.tokens.end(), c.draft.begin(), c.draft.begin() + accepted);
    s.num_computed += accepted;  // their K/V were written in this step
    return;
  }
}

// Rejected draft positions may have taken blocks the sequence does not need
// yet: they go back (they were never published to the prefix cache, which
// only sees computed full blocks).
void Scheduler::ReleaseUnusedBlocks(SeqState& s) {
  const auto keep = static_cast<size_t>(std::max<int64_t>(BlocksFor(s.num_tokens()), 0));
  if (s.blocks.size() <= keep) return;
  const std::vector<int32_t> tail(s.blocks.begin() + static_cast<std::ptrdiff_t>(keep),
                                  s.blocks.end());
  s.blocks.resize(keep);
  pool_->ReleaseTable(tail);
}

}  // namespace brisk
