#include "engine/output_processor.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "grammar/constraint.h"

namespace brisk {

// What a sample keeps between steps beyond the scheduler's plain state.
struct OutputProcessor::Sequence {
  Sequence(int64_t seq_id_, int64_t request_id_, int index_, const GenerationRequest& r,
           const Tokenizer& tok)
      : seq_id(seq_id_),
        request_id(request_id_),
        index(index_),
        n_prompt(static_cast<int32_t>(r.prompt.size())),
        max_tokens(r.max_tokens),
        min_tokens(r.min_tokens),
        ignore_eos(r.ignore_eos),
        include_stop_str(r.include_stop_str_in_output),
        skip_special(r.skip_special_tokens),
        params(r.sampling),
        sampler(r.sampling, 0x5eed0000ull + seq_id_),
        detok(tok, r.skip_special_tokens),
        stop_strings(r.stop),
        stop(r.stop),
        stop_token_ids(r.stop_token_ids),
        constraint(r.constraint),
        logprobs(r.logprobs),
        prompt_logprobs(r.logprobs >= 0 && r.prompt_logprobs) {
    if (constraint) matcher = std::make_unique<GrammarMatcher>(&constraint->grammar());
    // The first prompt token has no context: a record with no alternatives.
    if (prompt_logprobs && !r.prompt.empty()) prompt_lps.push_back({r.prompt[0], 0.0f, {}});
  }

  // Sample `k` of the same request, from this one right after its prompt was
  // computed: the same limits and stops, nothing generated yet, its own
  // sampler (a request seed moves by k so the samples differ).
  std::unique_ptr<Sequence> Fork(int64_t child_id, int k, const Tokenizer& tok) const {
    GenerationRequest proto;
    proto.sampling = params;
    if (proto.sampling.seed) *proto.sampling.seed += k;
    proto.max_tokens = max_tokens;
    proto.stop = stop_strings;
    proto.stop_token_ids = stop_token_ids;
    proto.ignore_eos = ignore_eos;
    proto.min_tokens = min_tokens;
    proto.include_stop_str_in_output = include_stop_str;
    proto.skip_special_tokens = skip_special;
    proto.constraint = constraint;
    proto.logprobs = logprobs;  // the prompt records are copied below
    auto child = std::make_unique<Sequence>(child_id, request_id, k, proto, tok);
    child->n_prompt = n_prompt;
    if (matcher) child->matcher->CopyFrom(*matcher);
    // Forks happen once the prompt is computed: its records are complete.
    child->prompt_logprobs = prompt_logprobs;
    child->prompt_lps = prompt_lps;
    return child;
  }

  SequenceOutput NewOutput() const {
    SequenceOutput out;
    out.request_id = request_id;
    out.index = index;
    return out;
  }

  int64_t seq_id;
  int64_t request_id;
  int index;
  int32_t n_prompt;
  int32_t n_generated = 0;
  int max_tokens;
  int min_tokens;
  bool ignore_eos;
  bool include_stop_str;
  bool skip_special;
  int pending_forks = 0;  // n - 1 until the first token is sampled
  SamplingParams params;
  Sampler sampler;
  IncrementalDetokenizer detok;
  std::vector<std::string> stop_strings;
  StopMatcher stop;
  std::vector<int32_t> stop_token_ids;
  std::shared_ptr<const CompiledConstraint> constraint;
  std::unique_ptr<GrammarMatcher> matcher;  // the grammar state; null when unconstrained
  int logprobs;                             // top alternatives per token; -1 = no logprobs
  bool prompt_logprobs;                     // still to record / send the prompt's records
  int32_t prompt_lp_next = 1;               // the next prompt position to record
  std::vector<TokenLogprob> prompt_lps;
  bool finished = false;
  int32_t cached_tokens = 0;  // from the scheduler, kept by NoteScheduled
  double queue_s = -1;
};

OutputProcessor::OutputProcessor(const Tokenizer& tokenizer, int64_t context_limit)
    : tokenizer_(tokenizer), context_limit_(context_limit) {
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id)
    if (tokenizer.IsEog(id)) eog_ids_.push_back(id);
  token_trie_future_ =
      std::async(std::launch::async, [&tok = tokenizer_] { return TokenTrie::Build(tok); });
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
    out->text += s.stop.Push(s.detok.Flush()).emit;
    out->text += s.stop.Flush();
  }
  out->prompt_tokens = s.n_prompt;
  out->completion_tokens = s.n_generated;
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
  if (s.matcher) SetGrammarMask(s, logits.size());
  const int32_t tok = s.sampler.Sample(logits, history);
  if (s.matcher) {
    s.sampler.ClearMask();
    // The mask allowed `tok`: its bytes advance the grammar (end tokens have none).
    if (tok >= 0 && !tokenizer_.IsEog(tok)) s.matcher->AdvanceBytes(tokenizer_.TokenToPiece(tok));
  }
  if (tok < 0) {
    Finish(s, FinishReason::kError, scheduler, out);
    result->finished = true;
    return;
  }
  result->token = tok;
  ++s.n_generated;
  out->new_tokens.push_back(tok);
  if (s.logprobs >= 0)
    out->logprobs.push_back(MakeTokenLogprob(raw_row_, tok, s.logprobs, &row_logprobs_));
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
             static_cast<int64_t>(history.size()) + 1 >= context_limit_) {
    Finish(s, FinishReason::kLength, scheduler, out);
  }
  result->finished = s.finished;
}

void OutputProcessor::Process(std::span<const ScheduledChunk> chunks, std::span<float> logits,
                              int vocab, const Scheduler& scheduler,
                              const std::function<int64_t()>& new_seq_id,
                              std::vector<SeqResult>* results, std::vector<SequenceOutput>* outputs,
                              std::span<const uint8_t> all_rows) {
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

void OutputProcessor::SetGrammarMask(Sequence& s, size_t vocab) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!masker_) {
    token_trie_ = token_trie_future_.get();
    masker_ = std::make_unique<TokenMasker>(token_trie_.get());
  }
  masker_->Compute(*s.matcher, &mask_bits_);
  ExpandMask(mask_bits_, vocab, &mask_bytes_);
  s.sampler.SetMask(mask_bytes_);
  mask_times_.push_back(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
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
