#include "engine/output_processor.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "engine/output_processor_sequence.h"
#include "engine/token_vocab.h"
#include "grammar/constraint.h"

namespace brisk {

OutputProcessor::OutputProcessor(const Tokenizer& tokenizer, int64_t context_limit)
    : tokenizer_(tokenizer), context_limit_(context_limit) {
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id)
    if (tokenizer.IsEog(id)) eog_ids_.push_back(id);
  token_trie_future_ = std::async(
      std::launch::async, [&tok = tokenizer_] { return TokenTrie::Build(TokenVocabOf(tok)); });
}

OutputProcessor::~OutputProcessor() = default;

void OutputProcessor::Add(int64_t request_id, int64_t seq_id, const GenerationRequest& r) {
  auto s = std::make_unique<Sequence>(seq_id, request_id, 0, r, tokenizer_);
  s->pending_forks = std::max(1, r.n) - 1;
  seqs_.emplace(seq_id, std::move(s));
  request_seqs_[request_id].push_back(seq_id);
}

void OutputProcessor::MarkFinished(Sequence& s) {
  if (s.finished) return;
  s.finished = true;
  finished_.push_back(s.seq_id);
}

void OutputProcessor::Finish(Sequence& s, FinishReason reason, const Scheduler& scheduler,
                             SequenceOutput* out) {
  MarkFinished(s);
  out->finished = true;
  out->reason = reason;
  // Held-back text is the user's unless a stop string cut it off.
  if (reason != FinishReason::kStop || !s.stop.stopped()) {
    std::string rest = s.detok.Flush();
    if (s.lazy) {  // held back as a possible trigger: content after all
      PushLazy(s, rest, out);
      rest = s.lazy->Flush();
    }
    out->text += s.stop.Push(rest).emit;
    out->text += s.stop.Flush();
  }
  out->prompt_tokens = s.n_prompt;
  out->completion_tokens = s.n_generated;
  out->accepted_draft_tokens = s.accepted_draft;
  if (const SeqState* st = scheduler.Find(s.seq_id)) NoteScheduled(*st);
  out->cached_tokens = s.cached_tokens;
  out->queue_s = s.queue_s;
}

void OutputProcessor::NoteScheduled(const SeqState& st) {
  auto it = seqs_.find(st.id);
  if (it == seqs_.end()) return;
  Sequence& s = *it->second;
  s.cached_tokens = std::max(0, st.num_cached_prompt);
  if (st.first_scheduled_s >= 0) s.queue_s = st.first_scheduled_s - st.arrival_s;
}

void OutputProcessor::FinishUnforked(Sequence& s, FinishReason reason,
                                     std::vector<SequenceOutput>* outputs) {
  for (int k = 1; k <= s.pending_forks; ++k) {
    SequenceOutput out = s.NewOutput();
    out.index = k;
    out.finished = true;
    out.reason = reason;
    out.prompt_tokens = s.n_prompt;
    outputs->push_back(std::move(out));
  }
  s.pending_forks = 0;
}

void OutputProcessor::FinishRequest(int64_t request_id, FinishReason reason,
                                    const Scheduler& scheduler,
                                    std::vector<SequenceOutput>* outputs) {
  auto it = request_seqs_.find(request_id);
  if (it == request_seqs_.end()) return;
  for (int64_t sid : it->second) {
    auto s = seqs_.find(sid);
    if (s == seqs_.end() || s->second->finished) continue;
    SequenceOutput out = s->second->NewOutput();
    Finish(*s->second, reason, scheduler, &out);
    outputs->push_back(std::move(out));
    FinishUnforked(*s->second, reason, outputs);
  }
}

void OutputProcessor::FinishSequence(int64_t seq_id, FinishReason reason,
                                     const Scheduler& scheduler,
                                     std::vector<SequenceOutput>* outputs) {
  auto s = seqs_.find(seq_id);
  if (s == seqs_.end() || s->second->finished) return;
  SequenceOutput out = s->second->NewOutput();
  Finish(*s->second, reason, scheduler, &out);
  outputs->push_back(std::move(out));
  FinishUnforked(*s->second, reason, outputs);
}

void OutputProcessor::SuppressStops(const Sequence& s, std::span<float> logits) const {
  const auto ban = [&](int32_t id) {
    if (id >= 0 && static_cast<size_t>(id) < logits.size())
      logits[id] = -std::numeric_limits<float>::infinity();
  };
  if (!s.ignore_eos)
    for (int32_t id : eog_ids_) ban(id);
  for (int32_t id : s.stop_token_ids) ban(id);
}

bool OutputProcessor::PushText(Sequence& s, int32_t tok, SequenceOutput* out) {
  std::string piece = s.detok.Push(tok);
  if (s.lazy) return PushLazy(s, piece, out);
  return PushContent(s, piece, out);
}

bool OutputProcessor::PushLazy(Sequence& s, std::string_view piece, SequenceOutput* out) {
  // The constrained part: the grammar decides where it ends, not stop strings.
  if (s.lazy->triggered()) {
    out->text += piece;
    return false;
  }
  LazyTriggerMatcher::Result r = s.lazy->Push(piece);
  if (PushContent(s, r.content, out)) return true;
  if (!r.triggered) return false;
  // No stop string can complete across the trigger: release what they held.
  out->text += s.stop.Flush();
  out->constrained_from = static_cast<int64_t>(out->text.size());
  s.matcher = MakeTokenConstraint(s.constraint);
  // The trigger's token was sampled without a mask: keep what the grammar
  // accepts of it (a space the compact grammar does not take is dropped).
  const size_t n = AdvanceAccepted(s.matcher.get(), r.constrained);
  out->text.append(r.constrained, 0, n);
  return false;
}

bool OutputProcessor::PushContent(Sequence& s, std::string_view piece, SequenceOutput* out) {
  // Before min_tokens, stop strings do not match: the text goes out as is
  // (nothing is held back in the matcher yet).
  if (s.n_generated < s.min_tokens) {
    out->text += piece;
    return false;
  }
  auto r = s.stop.Push(piece);
  out->text += r.emit;
  if (r.stopped && s.include_stop_str) out->text += s.stop_strings[s.stop.matched_index()];
  return r.stopped;
}

void OutputProcessor::Sample(Sequence& s, std::span<float> logits, std::span<const int32_t> history,
                             const Scheduler& scheduler, SequenceOutput* out, SeqResult* result) {
  // Logprobs are of the raw distribution: keep the row before any mask,
  // bias or penalty touches it.
  if (s.logprobs >= 0) raw_row_.assign(logits.begin(), logits.end());
  if (s.n_generated < s.min_tokens) SuppressStops(s, logits);
  const bool constrained = s.matcher != nullptr;
  if (constrained) SetSampleMask(s, logits.size());
  const int32_t tok = s.sampler.Sample(logits, history);
  if (constrained) s.sampler.ClearMask();
  AdvanceGrammar(s, tok);
  if (tok < 0) {
    Finish(s, FinishReason::kError, scheduler, out);
    result->finished = true;
    return;
  }
  result->token = tok;
  result->finished = Emit(s, tok, s.logprobs >= 0 ? raw_row_ : std::span<const float>(),
                          history.size(), scheduler, out);
}

void OutputProcessor::Process(std::span<const ScheduledChunk> chunks, std::span<float> logits,
                              int vocab, const Scheduler& scheduler,
                              const std::function<int64_t()>& new_seq_id,
                              std::vector<SeqResult>* results, std::vector<SequenceOutput>* outputs,
                              std::span<const uint8_t> all_rows) {
  WaitForMasks();
  int64_t row = 0;
  for (size_t ci = 0; ci < chunks.size(); ++ci) {
    const ScheduledChunk& c = chunks[ci];
    const bool all = ci < all_rows.size() && all_rows[ci];
    if (all) {
      auto it = seqs_.find(c.id);
      const SeqState* st = scheduler.Find(c.id);
      if (it != seqs_.end() && st)
        RecordPromptLogprobs(*it->second, c,
                             logits.subspan(row * vocab, int64_t{c.n_tokens} * vocab), vocab,
                             st->tokens);
      row += c.n_tokens - 1;  // the last row is the sampling row, if any
      if (!c.sample) {
        ++row;
        continue;
      }
    }
    if (!c.sample) continue;
    if (!c.draft.empty()) {
      // A decode with draft tokens owns one row per position.
      const int64_t n_rows = c.num_positions();
      SeqResult result;
      result.id = c.id;
      SequenceOutput out = seqs_.at(c.id)->NewOutput();
      ProcessDrafted(c, logits.subspan(row * vocab, n_rows * vocab), vocab, scheduler, &out,
                     &result);
      row += n_rows;
      outputs->push_back(std::move(out));
      results->push_back(std::move(result));
      continue;
    }
    std::span<float> lg = logits.subspan(row * vocab, vocab);
    ++row;
    Sequence& s = *seqs_.at(c.id);
    const std::vector<int32_t>& history = scheduler.Find(c.id)->tokens;
    SeqResult result;
    result.id = c.id;
    std::vector<SeqResult> child_finishes;
    if (s.pending_forks > 0) {
      // The other samples fork here, sharing the prompt's blocks, each
      // drawing its first token from the same logits.
      fork_logits_.assign(lg.begin(), lg.end());
      for (int k = 1; k <= s.pending_forks; ++k) {
        const int64_t cid = new_seq_id();
        auto child = s.Fork(cid, k, tokenizer_);
        std::vector<float> lk = fork_logits_;
        SequenceOutput cout = child->NewOutput();
        SeqResult cres;
        cres.id = cid;
        Sample(*child, lk, history, scheduler, &cout, &cres);
        if (cres.token >= 0) result.forks.emplace_back(cid, cres.token);
        if (cres.finished && cres.token >= 0) child_finishes.push_back({cid, -1, true, {}, 0});
        outputs->push_back(std::move(cout));
        request_seqs_[s.request_id].push_back(cid);
        seqs_.emplace(cid, std::move(child));
      }
      s.pending_forks = 0;
    }
    SequenceOutput out = s.NewOutput();
    Sample(s, lg, history, scheduler, &out, &result);
    outputs->push_back(std::move(out));
    results->push_back(std::move(result));
    results->insert(results->end(), child_finishes.begin(), child_finishes.end());
  }
}

bool OutputProcessor::WantsAllLogits(const ScheduledChunk& c) const {
  auto it = seqs_.find(c.id);
  if (it == seqs_.end()) return false;
  const Sequence& s = *it->second;
  // Row j predicts position pos_begin + j + 1: useful while that is a
  // prompt position not recorded yet.
  return s.prompt_logprobs && !s.finished && s.prompt_lp_next < s.n_prompt &&
         c.pos_begin + c.n_tokens >= s.prompt_lp_next;
}

void OutputProcessor::RecordPromptLogprobs(Sequence& s, const ScheduledChunk& c,
                                           std::span<const float> rows, int vocab,
                                           const std::vector<int32_t>& tokens) {
  if (!s.prompt_logprobs) return;
  for (int32_t j = 0; j < c.n_tokens; ++j) {
    const int32_t target = c.pos_begin + j + 1;
    // Recomputed positions (after a preemption) were recorded already.
    if (target != s.prompt_lp_next || target >= s.n_prompt) continue;
    if (static_cast<size_t>(target) >= tokens.size()) break;
    s.prompt_lps.push_back(MakeTokenLogprob(rows.subspan(size_t(j) * size_t(vocab), size_t(vocab)),
                                            tokens[static_cast<size_t>(target)], s.logprobs,
                                            &row_logprobs_));
    ++s.prompt_lp_next;
  }
}

std::vector<double> OutputProcessor::TakeGrammarMaskTimes() {
  std::vector<double> out;
  out.swap(mask_times_);
  return out;
}

std::vector<int64_t> OutputProcessor::TakeFinished() {
  std::vector<int64_t> done;
  done.swap(finished_);
  for (int64_t sid : done) {
    auto it = seqs_.find(sid);
    if (it == seqs_.end()) continue;
    const int64_t rid = it->second->request_id;
    auto& ids = request_seqs_[rid];
    std::erase(ids, sid);
    if (ids.empty()) request_seqs_.erase(rid);
    seqs_.erase(it);
  }
  return done;
}

}  // namespace brisk
