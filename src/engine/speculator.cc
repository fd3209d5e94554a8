#include "engine/speculator.h"

#include <algorithm>

namespace brisk {

Status SpeculativeOptions::Validate() const {
  if (num_tokens < 0 || num_tokens > 16)
    return InvalidArgument("speculative.num_tokens must be in 0..16, got {}", num_tokens);
  if (ngram_min < 1 || ngram_max > 8 || ngram_min > ngram_max)
    return InvalidArgument(
        "speculative ngram sizes must satisfy 1 <= ngram_min <= ngram_max <= 8, "
        "got {}..{}",
        ngram_min, ngram_max);
  if (max_batch < 1)
    return InvalidArgument("speculative.max_batch must be >= 1, got {}", max_batch);
  if (!(min_gain >= 1.0) || min_gain > 10.0)
    return InvalidArgument("speculative.min_gain must be in [1, 10], got {}", min_gain);
  return Status::Ok();
}

const char* SpeculativeMethodName(SpeculativeOptions::Method m) {
  switch (m) {
    case SpeculativeOptions::Method::kNone: return "none";
    case SpeculativeOptions::Method::kNgram: return "ngram";
  }
  return "none";
}

Speculator::Speculator(const SpeculativeOptions& options) : opts_(options) {}

void Speculator::Track(int64_t seq_id) {
  if (!enabled()) return;
  Seq s;
  s.drafter = std::make_unique<NgramDrafter>(opts_.ngram_min, opts_.ngram_max);
  seqs_.emplace(seq_id, std::move(s));
}

void Speculator::Forget(int64_t seq_id) { seqs_.erase(seq_id); }

void Speculator::Propose(Scheduler& scheduler) {
  if (seqs_.empty()) return;
  const SchedulerStats st = scheduler.stats();
  const int64_t running = st.running[0] + st.running[1];
  if (running > opts_.max_batch) return;
  // Without drafts the step would decode one token per running sequence
  // (the prefill chunks it may also carry are not known yet: a cost the
  // policy does not see, so it errs on the side of drafting less when they
  // come, as the measured step times grow).
  const auto batch = static_cast<size_t>(std::max<int64_t>(running, 1));
  for (auto it = seqs_.begin(); it != seqs_.end();) {
    const SeqState* state = scheduler.Find(it->first);
    if (!state) {  // finished: the engine forgets it too, this is a safety net
      it = seqs_.erase(it);
      continue;
    }
    Seq& s = it->second;
    ++it;
    if (state->status != SeqStatus::kRunning || state->num_generated() == 0 ||
        state->num_tokens() - state->num_computed != 1)
      continue;
    const auto& toks = state->tokens;
    if (s.fed > toks.size()) {  // cannot happen (tokens only grow); rebuild
      s.drafter->Truncate(s.fed);
      s.fed = 0;
    }
    s.drafter->Append(std::span<const int32_t>(toks).subspan(s.fed));
    s.fed = toks.size();
    const int k = opts_.adaptive ? ChooseDraftLength(s.acceptance.alpha(), opts_.num_tokens, batch,
                                                     batch, cost_, opts_.min_gain)
                                 : opts_.num_tokens;
    if (k <= 0) continue;
    s.drafter->Propose(k, &draft_, nullptr);
    if (!draft_.empty()) scheduler.SetDraft(state->id, draft_);
  }
}

void Speculator::Observe(std::span<const ScheduledChunk> chunks, std::span<const SeqResult> results,
                         int64_t batch_tokens, double forward_s, StepStats* stats) {
  if (!enabled()) return;
  cost_.Observe(static_cast<size_t>(std::max<int64_t>(batch_tokens, 1)), forward_s);
  for (const ScheduledChunk& c : chunks) {
    if (c.draft.empty()) continue;
    const auto r = std::find_if(results.begin(), results.end(),
                                [&](const SeqResult& x) { return x.id == c.id; });
    if (r == results.end()) continue;
    const int k = static_cast<int>(c.draft.size());
    const int a = std::clamp(r->accepted_draft, 0, k);
    // A sequence that finished on an accepted draft token (no token after
    // it) proves nothing about the next position: count only the positions
    // that faced a verdict.
    const int faced = a < k && r->token < 0 ? a : k;
    auto it = seqs_.find(c.id);
    if (it != seqs_.end()) it->second.acceptance.Update(faced, a);
    if (stats) {
      ++stats->spec_drafts;
      stats->spec_draft_tokens += k;
      stats->spec_accepted_tokens += a;
      if (stats->spec_accepted_per_pos.size() < static_cast<size_t>(k))
        stats->spec_accepted_per_pos.resize(static_cast<size_t>(k), 0);
      for (int i = 0; i < a; ++i) ++stats->spec_accepted_per_pos[static_cast<size_t>(i)];
    }
  }
}

}  // namespace brisk
