// OutputProcessor's speculative path: verifying a decode chunk's draft
// tokens (rejection_sampler.h) and emitting what was accepted, token by
// token, through the same path as a plainly sampled token (stops, limits,
// logprobs, detokenization). Under a structured-output constraint each
// verified row gets the mask of the grammar state after the drafts before
// it, so the accepted tokens are what constrained plain decoding draws.
#include <algorithm>

#include "engine/output_processor.h"
#include "engine/output_processor_sequence.h"
#include "engine/rejection_sampler.h"

namespace brisk {

void OutputProcessor::ProcessDrafted(const ScheduledChunk& c, std::span<float> rows, int vocab,
                                     const Scheduler& scheduler, SequenceOutput* out,
                                     SeqResult* result) {
  Sequence& s = *seqs_.at(c.id);
  const size_t v = static_cast<size_t>(vocab);
  size_t k = c.draft.size();
  // Logprobs are of the raw rows: keep them before the sampler touches them.
  if (s.logprobs >= 0) spec_raw_.assign(rows.begin(), rows.end());
  // Row i is what a plain step would sample from after draft[0, i): the same
  // history for the penalties, the same min_tokens rule, and under a
  // structured-output constraint the mask of the grammar state after
  // draft[0, i) (the state walks the draft from a mark and goes back to it:
  // it advances for good only through what is emitted).
  TokenConstraint* const grammar = s.matcher.get();
  if (grammar) grammar->Save();
  spec_history_ = scheduler.Find(c.id)->tokens;
  spec_probs_.resize((k + 1) * v);
  for (size_t i = 0; i <= k; ++i) {
    const std::span<float> row = rows.subspan(i * v, v);
    if (s.n_generated + static_cast<int32_t>(i) < s.min_tokens) SuppressStops(s, row);
    if (grammar) SetGrammarMask(*grammar, s.sampler, v);
    s.sampler.Distribution(row, spec_history_, &spec_row_);
    std::copy(spec_row_.begin(), spec_row_.end(), spec_probs_.begin() + i * v);
    if (i == k) break;
    const int32_t d = c.draft[i];
    if (grammar) {
      s.sampler.ClearMask();
      // A draft token the grammar rules out has probability 0 under the
      // mask: it is rejected for certain, and row i's distribution is what
      // follows. Verifying only draft[0, i) with row i as the bonus row
      // draws the same token distribution, without walking a state the
      // grammar never reaches. After an end token nothing is read.
      if (!mask_bytes_[static_cast<size_t>(d)]) {
        k = i;
        break;
      }
      if (tokenizer_.IsEog(d))
        k = i + 1;
      else
        grammar->AdvanceBytes(tokenizer_.TokenToPiece(d));
    }
    spec_history_.push_back(d);
  }
  if (grammar) {
    s.sampler.ClearMask();
    grammar->Restore();
  }
  const std::span<const int32_t> draft = std::span<const int32_t>(c.draft).first(k);
  const Verdict verdict = VerifyDraft(draft, std::span<const float>(spec_probs_).first((k + 1) * v),
                                      {}, v, s.params.greedy(), s.sampler, &spec_scratch_);
  const size_t history0 = spec_history_.size() - k;
  auto raw = [&](size_t i) {
    return s.logprobs >= 0 ? std::span<const float>(spec_raw_).subspan(i * v, v)
                           : std::span<const float>();
  };
  for (int i = 0; i < verdict.accepted; ++i) {
    ++result->accepted_draft;
    ++s.accepted_draft;
    AdvanceGrammar(s, c.draft[static_cast<size_t>(i)]);
    if (Emit(s, c.draft[static_cast<size_t>(i)], raw(static_cast<size_t>(i)),
             history0 + static_cast<size_t>(i), scheduler, out)) {
      result->finished = true;  // ended on an accepted draft token: nothing follows
      return;
    }
  }
  if (verdict.next < 0) {
    Finish(s, FinishReason::kError, scheduler, out);
    result->finished = true;
    return;
  }
  result->token = verdict.next;
  AdvanceGrammar(s, verdict.next);
  result->finished = Emit(s, verdict.next, raw(static_cast<size_t>(verdict.accepted)),
                          history0 + static_cast<size_t>(verdict.accepted), scheduler, out);
}

void OutputProcessor::TrimDraft(int64_t seq_id, std::vector<int32_t>* draft) {
  auto it = seqs_.find(seq_id);
  if (it == seqs_.end() || draft->empty()) return;
  Sequence& s = *it->second;
  TokenConstraint* const grammar = s.matcher.get();
  if (!grammar) return;
  grammar->Save();
  size_t keep = 0;
  // The tokens the mask would allow (token_mask.h): an end token where the
  // grammar can end (nothing after it counts), else a non-control token
  // whose bytes the grammar takes.
  for (; keep < draft->size(); ++keep) {
    const int32_t d = (*draft)[keep];
    if (tokenizer_.IsEog(d)) {
      if (grammar->CanEnd()) ++keep;
      break;
    }
    const std::string piece = tokenizer_.TokenToPiece(d, /*render_special=*/false);
    if (tokenizer_.IsControl(d) || piece.empty() || piece.size() > 255) break;
    if (!grammar->AdvanceBytes(piece)) break;
  }
  grammar->Restore();
  draft->resize(keep);
}

bool OutputProcessor::Emit(Sequence& s, int32_t tok, std::span<const float> raw_row,
                           size_t history_size, const Scheduler& scheduler, SequenceOutput* out) {
  ++s.n_generated;
  out->new_tokens.push_back(tok);
  if (s.logprobs >= 0)
    out->logprobs.push_back(MakeTokenLogprob(raw_row, tok, s.logprobs, &row_logprobs_));
  if (s.prompt_logprobs) {
    out->prompt_logprobs = std::move(s.prompt_lps);
    s.prompt_logprobs = false;
  }
  const bool stop_token =
      std::find(s.stop_token_ids.begin(), s.stop_token_ids.end(), tok) != s.stop_token_ids.end();
  if (stop_token || (!s.ignore_eos && tokenizer_.IsEog(tok))) {
    // The stop token's own text only on request (control tokens render only
    // without skip_special_tokens).
    if (s.include_stop_str)
      PushText(s, tok, out);
    else if (s.logprobs >= 0)
      out->logprobs.pop_back();  // no text, no record
    Finish(s, FinishReason::kStop, scheduler, out);
  } else if (PushText(s, tok, out)) {
    Finish(s, FinishReason::kStop, scheduler, out);
  } else if (s.n_generated >= s.max_tokens ||
             static_cast<int64_t>(history_size) + 1 >= context_limit_) {
    Finish(s, FinishReason::kLength, scheduler, out);
  }
  return s.finished;
}

}  // namespace brisk
