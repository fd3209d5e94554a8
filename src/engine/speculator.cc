#include "engine/speculator.h"

#include <algorithm>
#include <chrono>

#include "util/log.h"

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
  if ((method == Method::kDraftModel) != (draft_model != nullptr))
    return InvalidArgument("speculative.draft_model is needed by method 'draft' and only by it");
  return Status::Ok();
}

double PrefillTokenWeight(const ModelConfig& cfg) {
  const double d = cfg.d_model, q = static_cast<double>(cfg.n_heads) * cfg.head_dim,
               kv = static_cast<double>(cfg.n_kv_heads) * cfg.head_dim;
  // Per layer: q, k, v and output projections, gate, up and down.
  const double body = cfg.n_layers * (d * q + 2 * d * kv + q * d + 3 * d * cfg.d_ff);
  const double head = static_cast<double>(cfg.vocab) * d;
  return body + head > 0 ? body / (body + head) : 1.0;
}

Speculator::Speculator(const SpeculativeOptions& options, int64_t target_weight_bytes,
                       int64_t kv_blocks, int block_size, bool prefix_cache, double prefill_weight)
    : opts_(options), target_weight_bytes_(target_weight_bytes), cost_(prefill_weight) {
  if (opts_.method == SpeculativeOptions::Method::kDraftModel && opts_.draft_model)
    draft_model_ =
        std::make_unique<DraftModelRunner>(*opts_.draft_model, block_size, kv_blocks, prefix_cache);
}

void Speculator::Track(int64_t seq_id, int32_t max_tokens) {
  if (!enabled()) return;
  Seq s;
  s.acceptance = AcceptanceTracker(overall_.alpha());
  s.max_tokens = max_tokens;
  if (!draft_model_) s.drafter = std::make_unique<NgramDrafter>(opts_.ngram_min, opts_.ngram_max);
  seqs_.emplace(seq_id, std::move(s));
}

void Speculator::TrackFork(int64_t parent, int64_t child) {
  const auto it = seqs_.find(parent);
  if (it != seqs_.end()) Track(child, it->second.max_tokens);
}

void Speculator::Forget(int64_t seq_id) {
  if (auto it = seqs_.find(seq_id); it != seqs_.end()) {
    if (it->second.generated > 0) {
      const double n = it->second.generated;
      mean_output_ = mean_output_ > 0 ? 0.9 * mean_output_ + 0.1 * n : n;
    }
    seqs_.erase(it);
  }
  if (draft_model_) draft_model_->Forget(seq_id);
}

double Speculator::DraftSecondsPerToken(size_t batch) const {
  if (!draft_model_) return 0;
  batch = std::max<size_t>(batch, 1);
  // One draft round feeds one token of each drafting sequence. Prompt
  // catch-ups are not billed here: they are paid once per sequence, and a
  // per-token rate that carried them turned drafting off for good (the
  // probes then paid catch-ups for nothing). Before the round is measured
  // at this size, assume it costs the target's step in proportion to the
  // weights each reads (both are memory-bound at small batches).
  const double round = draft_model_->cost().Knows(batch)
                           ? draft_model_->cost().Seconds(batch)
                           : cost_.Seconds(batch) *
                                 static_cast<double>(draft_model_->weight_bytes()) /
                                 static_cast<double>(std::max<int64_t>(target_weight_bytes_, 1));
  return round / static_cast<double>(batch);
}

double Speculator::DraftPrefillSeconds(size_t tokens) const {
  // Until the draft has read a prompt of about this size, or one of 32
  // tokens or more (prefill time then grows about linearly), its decode
  // rounds say little about its prefill speed: scale the target's instead.
  const StepCostModel& own = draft_model_->cost();
  if (own.Brackets(tokens) || own.Largest() >= 32) return own.Seconds(tokens);
  return cost_.PrefillSeconds(tokens) * static_cast<double>(draft_model_->weight_bytes()) /
         static_cast<double>(std::max<int64_t>(target_weight_bytes_, 1));
}

bool Speculator::CatchUpPays(const SeqState& st, const Seq& s, size_t batch, double draft_s) const {
  // A sequence the draft is drafting for has nothing to catch up (the
  // common case, decided without scanning its tokens).
  if (!opts_.adaptive || draft_model_->Drafting(st.id)) return true;
  const int64_t pending = draft_model_->PendingTokens(st.id, st.tokens, st.salt);
  // What an ordinary draft step reads anyway (the tokens verified since the
  // last draft) is not a catch-up.
  if (pending <= opts_.num_tokens + 1) return true;
  // Tokens it may still generate after the one its prefill (or this step)
  // gives: none, and no draft could ever be verified.
  const double max_left = static_cast<double>(s.max_tokens) - st.num_generated() - 1;
  if (max_left < 1) return false;
  // Until enough drafts were verified, and for one sequence in kProbeEvery,
  // the draft reads the prompt anyway: the acceptance it would save by is
  // measured only where it drafts (otherwise an estimate that says "does
  // not pay" could never be revised).
  if (verdicts_ < kExploreVerdicts || st.id % kProbeEvery == 0) return true;
  const double alpha = overall_.alpha();
  const int k =
      ChooseDraftLength(alpha, opts_.num_tokens, batch, batch, cost_, opts_.min_gain, draft_s);
  if (k == 0) return false;
  double left = max_left;
  if (mean_output_ > 0) left = std::min(left, std::max(mean_output_ - st.num_generated(), 1.0));
  return SavedSecondsPerToken(alpha, k, batch, cost_, draft_s) * left >
         DraftPrefillSeconds(static_cast<size_t>(pending));
}

void Speculator::Propose(Scheduler& scheduler, ThreadPool& pool, const DraftTrim& trim) {
  eligible_ = 0;
  draft_s_ = 0;
  if (seqs_.empty()) return;
  const SchedulerStats st = scheduler.stats();
  const int64_t running = st.running[0] + st.running[1];
  if (running > opts_.max_batch) return;
  // Without drafts the step would decode one token per running sequence
  // (the prefill chunks it may also carry are not known yet: a cost the
  // policy does not see, so it errs on the side of drafting less when they
  // come, as the measured step times grow).
  const auto batch = static_cast<size_t>(std::max<int64_t>(running, 1));
  const double draft_s = DraftSecondsPerToken(batch);
  size_t step_drafts = 0;
  double step_extra = 0;  // tokens the step's drafts so far are expected to add
  requests_.clear();
  for (auto it = seqs_.begin(); it != seqs_.end();) {
    const SeqState* state = scheduler.Find(it->first);
    if (!state) {  // finished: the engine forgets it too, this is a safety net
      it = seqs_.erase(it);
      continue;
    }
    Seq& s = it->second;
    ++it;
    s.generated = state->num_generated();
    if (state->status != SeqStatus::kRunning) continue;
    if (state->num_generated() == 0 || state->num_tokens() - state->num_computed != 1)
      continue;  // prefilling: CatchUp
    ++eligible_;
    const auto& toks = state->tokens;
    // Each sequence decides with the drafts already given to the others in
    // the step (a step of 8 sequences each adding 3 drafts is 32 tokens,
    // not 11) and the tokens they are expected to bring.
    const double alpha = s.acceptance.alpha();
    int k = opts_.adaptive ? ChooseDraftLength(alpha, opts_.num_tokens, batch, batch + step_drafts,
                                               cost_, opts_.min_gain, draft_s, step_extra)
                           : opts_.num_tokens;
    // A probe finds out whether this sequence's acceptance has risen: only
    // worth its cost where a draft would pay at acceptance 1 (in a
    // compute-bound step the 9th position can cost more than a token's
    // share; there it still probes, rarely, so that what is measured is
    // not frozen).
    if (k == 0 && ++s.since_draft >= kProbeEvery &&
        (s.since_draft >= kProbeEvery * kProbeRarely ||
         ChooseDraftLength(1.0, opts_.num_tokens, batch, batch + step_drafts, cost_, opts_.min_gain,
                           draft_s, step_extra) > 0))
      k = 1;
    if (k > 0) s.since_draft = 0;
    // What the step's drafts so far cost and bring (a draft model's drafts
    // are trimmed later, rarely; an n-gram lookup may find fewer than k).
    auto count = [&](size_t given) {
      step_drafts += given;
      step_extra += ExpectedTokens(alpha, static_cast<int>(given)) - 1;
    };
    if (draft_model_) {
      // A draft that has not read the prompt yet (its catch-up did not pay
      // during the prefill) reads it only where that pays now.
      if (k > 0 && CatchUpPays(*state, s, batch, draft_s)) {
        requests_.push_back({state->id, toks, k, state->salt, {}});
        count(static_cast<size_t>(k));
      }
      continue;
    }
    if (s.fed > toks.size()) {  // cannot happen (tokens only grow); rebuild
      s.drafter->Truncate(s.fed);
      s.fed = 0;
    }
    s.drafter->Append(std::span<const int32_t>(toks).subspan(s.fed));
    s.fed = toks.size();
    if (k <= 0) continue;
    s.drafter->Propose(k, &draft_, nullptr);
    if (trim) trim(state->id, &draft_);
    if (!draft_.empty()) scheduler.SetDraft(state->id, draft_);
    count(draft_.size());
  }
  if (requests_.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const Status status = draft_model_->Propose(requests_, pool);
  draft_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!status.ok()) {  // the draft starts over; the target decodes plainly this step
    log::Warn("speculative: the draft model failed: {}", status.ToString());
    return;
  }
  for (auto& r : requests_) {
    if (trim) trim(r.seq_id, &r.draft);
    if (!r.draft.empty()) scheduler.SetDraft(r.seq_id, std::move(r.draft));
  }
}

void Speculator::CatchUp(std::span<const ScheduledChunk> chunks, const Scheduler& scheduler,
                         ThreadPool& pool) {
  if (!draft_model_ || seqs_.empty()) return;
  const SchedulerStats st = scheduler.stats();
  const int64_t running = st.running[0] + st.running[1];
  if (running > opts_.max_batch) return;
  const auto batch = static_cast<size_t>(std::max<int64_t>(running, 1));
  const double draft_s = DraftSecondsPerToken(batch);
  requests_.clear();
  size_t budget = DraftModelRunner::kMaxCatchUpTokens;
  for (const ScheduledChunk& c : chunks) {
    const SeqState* state = scheduler.Find(c.id);
    const auto it = seqs_.find(c.id);
    if (!state || it == seqs_.end() || !c.draft.empty()) continue;
    const auto end = static_cast<size_t>(c.pos_begin + c.n_tokens);
    if (state->num_generated() > 0 && end + 1 >= state->tokens.size()) continue;  // decoding
    if (!CatchUpPays(*state, it->second, batch, draft_s)) continue;
    // The draft reads what the target has computed after this step (the
    // runner stops one short: the newest token's logits come with the
    // first draft).
    budget += static_cast<size_t>(c.n_tokens);
    requests_.push_back(
        {state->id, std::span<const int32_t>(state->tokens).first(end), 0, state->salt, {}});
  }
  if (requests_.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const Status status = draft_model_->Propose(requests_, pool, budget);
  draft_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!status.ok()) log::Warn("speculative: the draft model failed: {}", status.ToString());
}

void Speculator::Observe(std::span<const ScheduledChunk> chunks, std::span<const SeqResult> results,
                         int64_t decode_tokens, int64_t prefill_tokens, double step_s,
                         StepStats* stats) {
  if (!enabled()) return;
  if (stats) {
    stats->spec_eligible = eligible_;
    stats->spec_draft_s = draft_s_;
    if (draft_model_) {
      stats->spec_draft_prompt_tokens = draft_model_->catch_up_tokens() - reported_catch_up_;
      stats->spec_draft_cached_tokens = draft_model_->cached_tokens() - reported_cached_;
      reported_catch_up_ = draft_model_->catch_up_tokens();
      reported_cached_ = draft_model_->cached_tokens();
    }
  }
  cost_.Observe(static_cast<size_t>(std::max<int64_t>(decode_tokens, 0)),
                static_cast<size_t>(std::max<int64_t>(prefill_tokens, 0)), step_s);
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
    overall_.Update(faced, a);
    verdicts_ += faced;
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
