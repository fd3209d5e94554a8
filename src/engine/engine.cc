#include "engine/engine.h"

#include <algorithm>

namespace brisk {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "";
}

struct Engine::Sequence {
  Sequence(int64_t id_, GenerationRequest r, const Tokenizer& tok, uint64_t seed)
      : id(id_),
        tokens(std::move(r.prompt)),
        n_prompt(static_cast<int32_t>(tokens.size())),
        max_tokens(r.max_tokens),
        ignore_eos(r.ignore_eos),
        sampler(r.sampling, seed),
        detok(tok),
        stop(std::move(r.stop)),
        stop_token_ids(std::move(r.stop_token_ids)) {}

  int64_t id;
  std::vector<int32_t> tokens;  // prompt + generated
  int32_t n_prompt;
  int32_t num_computed = 0;  // tokens whose K/V are in the cache
  int max_tokens;
  bool ignore_eos;
  Sampler sampler;
  IncrementalDetokenizer detok;
  StopMatcher stop;
  std::vector<int32_t> stop_token_ids;
  std::vector<int32_t> blocks;
  std::atomic<bool> cancelled{false};
  bool finished = false;

  int32_t num_generated() const { return static_cast<int32_t>(tokens.size()) - n_prompt; }
};

Engine::Engine(LlamaModel& model, const Tokenizer& tokenizer, const EngineOptions& options)
    : model_(model),
      tokenizer_(tokenizer),
      opts_(options),
      threads_(options.n_threads),
      kv_(model.kv_shape(options.block_size),
          KvCache::BlocksForBudget(model.kv_shape(options.block_size), options.kv_budget_bytes)),
      pool_(kv_.num_blocks()) {}

Engine::~Engine() = default;

Expected<int64_t> Engine::Add(GenerationRequest r) {
  if (r.prompt.empty()) return InvalidArgument("the prompt is empty");
  if (r.max_tokens < 1)
    return InvalidArgument("max_tokens must be at least 1, got {}", r.max_tokens);
  const int64_t ctx = context_limit();
  if (static_cast<int64_t>(r.prompt.size()) + r.max_tokens > ctx)
    return OutOfRange("prompt ({} tokens) + max_tokens ({}) exceeds the context length {}",
                      r.prompt.size(), r.max_tokens, ctx);
  const int64_t need_blocks =
      (static_cast<int64_t>(r.prompt.size()) + r.max_tokens + opts_.block_size - 1) /
      opts_.block_size;
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
  const int64_t id = next_id_++;
  seqs_.push_back(std::make_unique<Sequence>(id, std::move(r), tokenizer_, 0x5eed0000ull + id));
  return id;
}

void Engine::Cancel(int64_t seq_id) {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  cancel_requests_.push_back(seq_id);
}

void Engine::Finish(Sequence& s, FinishReason reason, SequenceOutput* out) {
  s.finished = true;
  out->finished = true;
  out->reason = reason;
  if (reason != FinishReason::kStop || !s.stop.stopped()) {
    out->text += s.stop.Push(s.detok.Flush()).emit;
    out->text += s.stop.Flush();
  }
  pool_.Release(s.blocks);
  s.blocks.clear();
}

// KV exhaustion: the pool says no without side effects, and the newest
// sequence that holds blocks and is not in this step's batch gives them back
// (recompute: it keeps its tokens and prefills them again later). Only newer
// sequences are preempted, so the oldest always makes progress.
bool Engine::AllocateOrPreempt(Sequence& s, int64_t need, const std::vector<Sequence*>& scheduled) {
  while (!pool_.Allocate(need, &s.blocks)) {
    Sequence* victim = nullptr;
    for (auto it = seqs_.rbegin(); it != seqs_.rend() && it->get() != &s; ++it) {
      Sequence* v = it->get();
      if (!v->blocks.empty() &&
          std::find(scheduled.begin(), scheduled.end(), v) == scheduled.end()) {
        victim = v;
        break;
      }
    }
    if (!victim) return false;
    pool_.Release(victim->blocks);
    victim->blocks.clear();
    victim->num_computed = 0;
    ++num_preemptions_;
  }
  return true;
}

Status Engine::Step(std::vector<SequenceOutput>* outputs) {
  // Cancelled sequences leave before any work is scheduled for them.
  {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    for (int64_t id : cancel_requests_)
      for (auto& sp : seqs_)
        if (sp->id == id) sp->cancelled.store(true);
    cancel_requests_.clear();
  }
  for (auto& sp : seqs_) {
    if (sp->cancelled.load()) {
      SequenceOutput out;
      out.seq_id = sp->id;
      Finish(*sp, FinishReason::kCancelled, &out);
      outputs->push_back(std::move(out));
    }
  }
  std::erase_if(seqs_, [](const auto& s) { return s->finished; });

  // Decodes first (one token each), then prefill chunks fill the budget.
  batch_.Clear();
  std::vector<Sequence*> scheduled;
  std::vector<int32_t> chunk_of;
  int budget = opts_.max_batch_tokens;
  const int bs = opts_.block_size;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& sp : seqs_) {
      Sequence& s = *sp;
      if (static_cast<int>(scheduled.size()) >= opts_.max_concurrent_sequences) break;
      const int32_t pending = static_cast<int32_t>(s.tokens.size()) - s.num_computed;
      const bool is_decode = pending == 1 && s.num_computed > 0;
      if ((pass == 0) != is_decode || pending <= 0 || budget <= 0) continue;
      const int32_t chunk = std::min(pending, budget);
      const int64_t need =
          (int64_t{s.num_computed} + chunk + bs - 1) / bs - static_cast<int64_t>(s.blocks.size());
      if (need > 0 && !AllocateOrPreempt(s, need, scheduled)) continue;  // waits for blocks
      const bool last = s.num_computed + chunk == static_cast<int32_t>(s.tokens.size());
      batch_.Add(std::span<const int32_t>(s.tokens).subspan(s.num_computed, chunk), s.num_computed,
                 s.blocks, last ? BatchSequence::Logits::kLast : BatchSequence::Logits::kNone);
      scheduled.push_back(&s);
      chunk_of.push_back(chunk);
      budget -= chunk;
    }
  }
  if (scheduled.empty()) {
    if (!seqs_.empty() && pool_.num_used() == 0)
      return Internal("no sequence can be scheduled with an empty KV pool");
    return Status::Ok();
  }

  RETURN_IF_ERROR(model_.Forward(batch_, kv_, threads_, &logits_));

  const int vocab = model_.config().vocab;
  int64_t row = 0;
  for (size_t i = 0; i < scheduled.size(); ++i) {
    Sequence& s = *scheduled[i];
    s.num_computed += chunk_of[i];
    if (batch_.seqs[i].logits == BatchSequence::Logits::kNone) continue;
    std::span<float> lg(logits_.data() + row * vocab, vocab);
    ++row;
    const int32_t tok = s.sampler.Sample(lg, s.tokens);
    SequenceOutput out;
    out.seq_id = s.id;
    if (tok < 0) {
      Finish(s, FinishReason::kError, &out);
      outputs->push_back(std::move(out));
      continue;
    }
    s.tokens.push_back(tok);
    out.new_tokens.push_back(tok);
    const bool stop_token =
        std::find(s.stop_token_ids.begin(), s.stop_token_ids.end(), tok) != s.stop_token_ids.end();
    if (stop_token || (!s.ignore_eos && tokenizer_.IsEog(tok))) {
      Finish(s, FinishReason::kStop, &out);
    } else {
      auto r = s.stop.Push(s.detok.Push(tok));
      out.text = std::move(r.emit);
      if (r.stopped) {
        Finish(s, FinishReason::kStop, &out);
      } else if (s.num_generated() >= s.max_tokens ||
                 static_cast<int64_t>(s.tokens.size()) >= context_limit()) {
        Finish(s, FinishReason::kLength, &out);
      }
    }
    outputs->push_back(std::move(out));
  }
  std::erase_if(seqs_, [](const auto& s) { return s->finished; });
  return Status::Ok();
}

}  // namespace brisk
