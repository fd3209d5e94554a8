#include "engine/engine.h"

#include <algorithm>

namespace brisk {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kDeadline: return "deadline";
    case FinishReason::kError: return "error";
  }
  return "";
}

// What the engine keeps per sequence beyond the scheduler's plain state.
struct Engine::Sequence {
  Sequence(int64_t id_, int64_t request_id_, int index_, const GenerationRequest& r,
           const Tokenizer& tok, uint64_t seed)
      : id(id_),
        request_id(request_id_),
        index(index_),
        n_prompt(static_cast<int32_t>(r.prompt.size())),
        max_tokens(r.max_tokens),
        ignore_eos(r.ignore_eos),
        params(r.sampling),
        sampler(r.sampling, seed),
        detok(tok),
        stop_strings(r.stop),
        stop(r.stop),
        stop_token_ids(r.stop_token_ids) {}

  int64_t id;
  int64_t request_id;
  int index;
  int32_t n_prompt;
  int32_t n_generated = 0;
  int max_tokens;
  bool ignore_eos;
  int pending_forks = 0;  // n - 1 until the first token is sampled
  SamplingParams params;
  Sampler sampler;
  IncrementalDetokenizer detok;
  std::vector<std::string> stop_strings;
  StopMatcher stop;
  std::vector<int32_t> stop_token_ids;
  bool finished = false;
};

Engine::Engine(LlamaModel& model, const Tokenizer& tokenizer, const EngineOptions& options)
    : model_(model),
      tokenizer_(tokenizer),
      opts_(options),
      context_limit_(
          options.max_context_tokens > 0
              ? std::min<int64_t>(options.max_context_tokens, model.config().context_length)
              : model.config().context_length),
      threads_(options.n_threads),
      kv_(model.kv_shape(options.block_size),
          KvCache::BlocksForBudget(model.kv_shape(options.block_size), options.kv_budget_bytes)),
      pool_(kv_.num_blocks()),
      scheduler_(
          [&] {
            SchedulerOptions s;
            s.max_batch_tokens = options.max_batch_tokens;
            s.max_concurrent_sequences = options.max_concurrent_sequences;
            s.prefill_chunk_tokens = options.prefill_chunk_tokens;
            s.block_size = options.block_size;
            s.continuous_batching = options.continuous_batching;
            s.prefix_cache = options.prefix_cache;
            s.aging_s = options.aging_s;
            for (int p = 0; p < kNumPriorities; ++p) s.max_waiting[p] = options.max_waiting[p];
            return s;
          }(),
          &pool_),
      t0_(Clock::now()) {
  if (options.prefault_kv) kv_.Prefault();
}

Engine::~Engine() = default;

double Engine::Now() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

Status Engine::Validate(const GenerationRequest& r) const {
  if (r.prompt.empty()) return InvalidArgument("the prompt is empty");
  if (r.max_tokens < 1)
    return InvalidArgument("max_tokens must be at least 1, got {}", r.max_tokens);
  if (r.n < 1 || r.n > 128) return InvalidArgument("n must be in 1..128, got {}", r.n);
  const int64_t ctx = context_limit();
  if (static_cast<int64_t>(r.prompt.size()) + r.max_tokens > ctx)
    return OutOfRange("prompt ({} tokens) + max_tokens ({}) exceeds the context length {}",
                      r.prompt.size(), r.max_tokens, ctx);
  const int64_t need_blocks =
      scheduler_.BlocksFor(static_cast<int64_t>(r.prompt.size()) + r.max_tokens);
  if (need_blocks > pool_.num_blocks())
    return OutOfRange("request needs {} KV blocks but the cache holds {}", need_blocks,
                      pool_.num_blocks());
  for (int32_t t : r.prompt)
    if (t < 0 || t >= model_.config().vocab) return InvalidArgument("token id {} out of range", t);
  RETURN_IF_ERROR(r.sampling.Validate());
  RETURN_IF_ERROR(StopMatcher::Validate(r.stop));
  for (int32_t t : r.stop_token_ids)
    if (t < 0 || t >= model_.config().vocab)
      return InvalidArgument("stop token id {} out of range", t);

  return Status::Ok();
}

Expected<int64_t> Engine::Add(GenerationRequest r) {
  RETURN_IF_ERROR(Validate(r));
  const double now = Now();
  SeqState st;
  st.id = next_id_;
  st.priority = r.priority;
  st.arrival_s = r.arrival ? std::chrono::duration<double>(*r.arrival - t0_).count() : now;
  if (r.deadline) st.deadline_s = std::chrono::duration<double>(*r.deadline - t0_).count();
  st.tokens = r.prompt;
  st.num_prompt = static_cast<int32_t>(r.prompt.size());
  st.salt = RootBlockHash(r.cache_salt);
  RETURN_IF_ERROR(scheduler_.Add(std::move(st)));

  const int64_t id = next_id_++;
  auto seq = std::make_unique<Sequence>(id, id, 0, r, tokenizer_, 0x5eed0000ull + id);
  seq->pending_forks = r.n - 1;
  seqs_.emplace(id, std::move(seq));
  request_seqs_[id].push_back(id);
  return id;
}

void Engine::Cancel(int64_t request_id) {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  cancel_requests_.push_back(request_id);
}

// A request that ends before its first token (cancel, deadline, error) never
// forked its other samples: report them finished too, so every request gets
// exactly n finished outputs.
void Engine::FinishUnforked(Sequence& s, FinishReason reason,
                            std::vector<SequenceOutput>* outputs) {
  for (int k = 1; k <= s.pending_forks; ++k) {
    SequenceOutput out = NewOutput(s);
    out.index = k;
    out.finished = true;
    out.reason = reason;
    out.prompt_tokens = s.n_prompt;
    outputs->push_back(std::move(out));
  }
  s.pending_forks = 0;
}

SequenceOutput Engine::NewOutput(const Sequence& s) const {
  SequenceOutput out;
  out.seq_id = s.request_id;
  out.index = s.index;
  return out;
}

void Engine::Finish(Sequence& s, FinishReason reason, SequenceOutput* out) {
  s.finished = true;
  out->finished = true;
  out->reason = reason;
  if (reason != FinishReason::kStop || !s.stop.stopped()) {
    out->text += s.stop.Push(s.detok.Flush()).emit;
    out->text += s.stop.Flush();
  }
  out->prompt_tokens = s.n_prompt;
  out->completion_tokens = s.n_generated;
  if (const SeqState* st = scheduler_.Find(s.id)) {
    out->cached_tokens = std::max(0, st->num_cached_prompt);
    if (st->first_scheduled_s >= 0) out->queue_s = st->first_scheduled_s - st->arrival_s;
  }
}

void Engine::SampleInto(Sequence& s, std::span<float> logits, const std::vector<int32_t>& history,
                        SequenceOutput* out, SeqResult* result) {
  const int32_t tok = s.sampler.Sample(logits, history);
  if (tok < 0) {
    Finish(s, FinishReason::kError, out);
    result->finished = true;
    return;
  }
  result->token = tok;
  ++s.n_generated;
  out->new_tokens.push_back(tok);
  const bool stop_token =
      std::find(s.stop_token_ids.begin(), s.stop_token_ids.end(), tok) != s.stop_token_ids.end();
  if (stop_token || (!s.ignore_eos && tokenizer_.IsEog(tok))) {
    Finish(s, FinishReason::kStop, out);
  } else {
    auto r = s.stop.Push(s.detok.Push(tok));
    out->text = std::move(r.emit);
    if (r.stopped) {
      Finish(s, FinishReason::kStop, out);
    } else if (s.n_generated >= s.max_tokens ||
               static_cast<int64_t>(history.size()) + 1 >= context_limit()) {
      Finish(s, FinishReason::kLength, out);
    }
  }
  result->finished = s.finished;
}

Status Engine::Step(std::vector<SequenceOutput>* outputs) {
  // Cancelled requests leave before any work is scheduled for them.
  std::vector<int64_t> cancels;
  {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    cancels.swap(cancel_requests_);
  }
  for (int64_t rid : cancels) {
    auto it = request_seqs_.find(rid);
    if (it == request_seqs_.end()) continue;
    for (int64_t sid : it->second) {
      auto s = seqs_.find(sid);
      if (s == seqs_.end() || s->second->finished) continue;
      SequenceOutput out = NewOutput(*s->second);
      Finish(*s->second, FinishReason::kCancelled, &out);
      scheduler_.Abort(sid);
      outputs->push_back(std::move(out));
      FinishUnforked(*s->second, FinishReason::kCancelled, outputs);
    }
  }

  SchedulerOutput so = scheduler_.Schedule(Now());
  for (int64_t sid : so.expired) {
    auto s = seqs_.find(sid);
    if (s == seqs_.end()) continue;
    SequenceOutput out = NewOutput(*s->second);
    Finish(*s->second, FinishReason::kDeadline, &out);
    outputs->push_back(std::move(out));
    FinishUnforked(*s->second, FinishReason::kDeadline, outputs);
  }
  last_step_ = {};
  if (so.empty()) {
    if (scheduler_.HasWork() && pool_.num_used() == 0)
      return Internal("no sequence can be scheduled with an empty KV pool");
  } else {
    for (const auto& [src, dst] : so.block_copies) kv_.CopyBlock(src, dst);
    batch_.Clear();
    for (const ScheduledChunk& c : so.chunks) {
      const SeqState* st = scheduler_.Find(c.id);
      batch_.Add(std::span<const int32_t>(st->tokens).subspan(c.pos_begin, c.n_tokens), c.pos_begin,
                 st->blocks,
                 c.sample ? BatchSequence::Logits::kLast : BatchSequence::Logits::kNone);
    }
    const auto t_fwd = Clock::now();
    RETURN_IF_ERROR(model_.Forward(batch_, kv_, threads_, &logits_));
    last_step_.forward_s = std::chrono::duration<double>(Clock::now() - t_fwd).count();
    last_step_.prefill_tokens = so.num_prefill_tokens;
    last_step_.decode_tokens = so.num_decode_tokens;
    last_step_.sequences = static_cast<int32_t>(so.chunks.size());

    const int vocab = model_.config().vocab;
    std::vector<SeqResult> results;
    int64_t row = 0;
    for (const ScheduledChunk& c : so.chunks) {
      if (!c.sample) continue;
      std::span<float> lg(logits_.data() + row * vocab, vocab);
      ++row;
      Sequence& s = *seqs_.at(c.id);
      const std::vector<int32_t>& history = scheduler_.Find(c.id)->tokens;
      SeqResult result;
      result.id = c.id;
      std::vector<SeqResult> child_finishes;
      if (s.pending_forks > 0) {
        // n > 1: the other samples fork here, sharing the prompt's blocks,
        // each sampling its first token from the same logits.
        fork_logits_.assign(lg.begin(), lg.end());
        for (int k = 1; k <= s.pending_forks; ++k) {
          const int64_t cid = next_id_++;
          GenerationRequest proto;
          proto.prompt.resize(s.n_prompt);
          proto.sampling = s.params;
          if (proto.sampling.seed) *proto.sampling.seed += k;
          proto.max_tokens = s.max_tokens;
          proto.stop = s.stop_strings;
          proto.stop_token_ids = s.stop_token_ids;
          proto.ignore_eos = s.ignore_eos;
          auto child = std::make_unique<Sequence>(cid, s.request_id, k, proto, tokenizer_,
                                                  0x5eed0000ull + cid);
          std::vector<float> lk = fork_logits_;
          SequenceOutput cout = NewOutput(*child);
          SeqResult cres;
          cres.id = cid;
          SampleInto(*child, lk, history, &cout, &cres);
          if (cres.token >= 0) result.forks.emplace_back(cid, cres.token);
          if (cres.finished && cres.token >= 0) child_finishes.push_back({cid, -1, true, {}});
          outputs->push_back(std::move(cout));
          request_seqs_[s.request_id].push_back(cid);
          seqs_.emplace(cid, std::move(child));
        }
        s.pending_forks = 0;
      }
      SequenceOutput out = NewOutput(s);
      SampleInto(s, lg, history, &out, &result);
      outputs->push_back(std::move(out));
      if (s.finished) FinishUnforked(s, FinishReason::kError, outputs);
      results.push_back(std::move(result));
      results.insert(results.end(), child_finishes.begin(), child_finishes.end());
    }
    scheduler_.UpdateFromOutput(so, results);
  }

  // Forget finished sequences and requests.
  for (auto it = seqs_.begin(); it != seqs_.end();) {
    if (!it->second->finished) {
      ++it;
      continue;
    }
    scheduler_.Abort(it->first);  // no-op unless it still holds blocks
    auto& ids = request_seqs_[it->second->request_id];
    std::erase(ids, it->first);
    if (ids.empty()) request_seqs_.erase(it->second->request_id);
    it = seqs_.erase(it);
  }
  return Status::Ok();
}

}  // namespace brisk
