#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "util/log.h"

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

Engine::Engine(Model& model, const Tokenizer& tokenizer, const EngineOptions& options)
    : model_(model),
      opts_(options),
      context_limit_(
          options.max_context_tokens > 0
              ? std::min<int64_t>(options.max_context_tokens, model.config().context_length)
              : model.config().context_length),
      threads_(options.n_threads),
      kv_(model.kv_shape(options.scheduler.block_size, options.kv_type, options.window_paging),
          KvCache::BlocksForBudget(
              model.kv_shape(options.scheduler.block_size, options.kv_type, options.window_paging),
              options.kv_budget_bytes)),
      pool_(kv_.num_blocks(), kv_.shape().local_groups),
      scheduler_(
          [&] {
            SchedulerOptions s = options.scheduler;
            s.sliding_window = kv_.shape().local_groups > 0 ? model.config().sliding_window : 0;
            return s;
          }(),
          &pool_),
      outputs_(tokenizer, context_limit_),
      speculator_(options.speculative, model.weight_bytes(), kv_.num_blocks(),
                  options.scheduler.block_size, options.scheduler.prefix_cache,
                  PrefillTokenWeight(model.config())),
      t0_(Clock::now()) {
  if (options.prefault_kv) kv_.Prefault();
  if (options.kv_events) {
    external_hasher_ = std::make_unique<ExternalBlockHasher>(options.kv_events_hash_seed);
    kv_events_ = std::make_unique<KvEventLog>(pool_.num_blocks(), options.scheduler.block_size,
                                              scheduler_.options().sliding_window);
    kv_events_->Cleared();  // a subscriber forgets what an earlier process held
    scheduler_.EnableKvEvents(kv_events_.get(), external_hasher_.get());
  }
  if (!options.kv_disk.dir.empty()) OpenKvDisk(options.kv_disk);
  using Overlap = EngineOptions::MaskOverlap;
  const unsigned cores = std::thread::hardware_concurrency();
  outputs_.set_mask_overlap(
      options.mask_overlap == Overlap::kOn ||
      (options.mask_overlap == Overlap::kAuto && cores > static_cast<unsigned>(threads_.size())));
}

Engine::~Engine() = default;

void Engine::OpenKvDisk(KvDiskStoreOptions o) {
  o.serving_key = fmt::format("{}|{}", o.serving_key, KvLayoutKey(kv_.shape()));
  auto store = KvDiskStore::Open(o);
  if (!store.ok()) {
    log::Warn("KV disk tier off: {} (serving from the RAM prefix cache only)",
              store.status().message());
    kv_disk_failed_ = true;
    return;
  }
  const KvDiskStats st = (*store)->stats();
  log::Info("KV disk tier: {} ({} blocks, {} of {} bytes)", (*store)->key_dir(), st.entries,
            st.bytes_used, o.capacity_bytes);
  kv_disk_ = std::make_unique<KvDiskTier>(&kv_, std::move(*store));
  scheduler_.SetKvTier(kv_disk_.get());
}

KvDiskStats Engine::kv_disk_stats() const {
  if (kv_disk_) return kv_disk_->store().stats();
  KvDiskStats st;
  st.writes_disabled = kv_disk_failed_;
  return st;
}

void Engine::FlushKvDisk() {
  if (kv_disk_) kv_disk_->store().Flush();
}

std::vector<KvEvent> Engine::TakeKvEvents() {
  return kv_events_ ? kv_events_->Take() : std::vector<KvEvent>{};
}

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
  if (r.n > opts_.scheduler.max_concurrent_sequences)
    return OutOfRange("n = {} samples can never run at once: at most {} sequences run together",
                      r.n, opts_.scheduler.max_concurrent_sequences);
  // Every sample needs its own blocks for what it generates (plus the shared
  // last prompt block it copies on its first write); the prompt is shared.
  const int64_t need_blocks =
      scheduler_.PagesFor(static_cast<int64_t>(r.prompt.size()) + r.max_tokens) +
      int64_t{r.n - 1} * (scheduler_.PagesFor(r.max_tokens) + pool_.PagesFor(1));
  if (need_blocks > pool_.num_blocks())
    return OutOfRange("request needs {} KV pages but the cache holds {}", need_blocks,
                      pool_.num_blocks());
  for (int32_t t : r.prompt)
    if (t < 0 || t >= model_.config().vocab) return InvalidArgument("token id {} out of range", t);
  RETURN_IF_ERROR(r.sampling.Validate());
  RETURN_IF_ERROR(StopMatcher::Validate(r.stop));
  for (int32_t t : r.stop_token_ids)
    if (t < 0 || t >= model_.config().vocab)
      return InvalidArgument("stop token id {} out of range", t);
  for (const auto& [t, bias] : r.sampling.logit_bias)
    if (t >= model_.config().vocab)
      return InvalidArgument("logit_bias token id {} out of range", t);
  if (r.logprobs < -1 || r.logprobs > kMaxLogprobsTop)
    return InvalidArgument("logprobs must be in -1..{} (-1 = none), got {}", kMaxLogprobsTop,
                           r.logprobs);
  if (r.min_tokens < 0 || r.min_tokens > r.max_tokens)
    return InvalidArgument("min_tokens must be in 0..max_tokens ({}), got {}", r.max_tokens,
                           r.min_tokens);

  return Status::Ok();
}

Status Engine::Add(int64_t request_id, GenerationRequest r) {
  RETURN_IF_ERROR(Validate(r));
  const double now = Now();
  SeqState st;
  st.id = next_seq_id_;
  st.priority = r.priority;
  st.arrival_s = r.arrival ? std::chrono::duration<double>(*r.arrival - t0_).count() : now;
  if (r.deadline) st.deadline_s = std::chrono::duration<double>(*r.deadline - t0_).count();
  st.tokens = r.prompt;
  st.num_prompt = static_cast<int32_t>(r.prompt.size());
  st.num_seats = r.n;
  // Prompt logprobs need every prompt position computed: a salt no other
  // request has keeps the prefix cache from serving any of it.
  const std::string logprobs_salt =
      r.prompt_logprobs && r.logprobs >= 0
          ? fmt::format("{}\x1fprompt-logprobs/{}", r.cache_salt, request_id)
          : std::string();
  const std::string_view salt = logprobs_salt.empty() ? r.cache_salt : logprobs_salt;
  st.salt = RootBlockHash(salt);
  if (kv_events_) st.salt_text = salt;  // vLLM's extra keys (kv_events.h)
  st.tenant = std::hash<std::string>{}(r.tenant);
  RETURN_IF_ERROR(scheduler_.Add(std::move(st)));
  // A lazy constraint (tool_choice auto) decodes plainly (speculator.h).
  if (r.speculate && (!r.constraint || r.constraint_trigger.text.empty()))
    speculator_.Track(next_seq_id_, r.max_tokens);
  outputs_.Add(request_id, next_seq_id_++, r);
  return Status::Ok();
}

Expected<int64_t> Engine::Add(GenerationRequest r) {
  const int64_t id = next_request_id_;
  RETURN_IF_ERROR(Add(id, std::move(r)));
  ++next_request_id_;
  return id;
}

void Engine::Cancel(int64_t request_id) { cancels_.push_back(request_id); }

void Engine::ApplyCancels(std::vector<SequenceOutput>* outputs) {
  for (int64_t rid : cancels_)
    outputs_.FinishRequest(rid, FinishReason::kCancelled, scheduler_, outputs);
  cancels_.clear();
  ReleaseFinished();
}

void Engine::ReleaseFinished() {
  for (int64_t sid : outputs_.TakeFinished()) {
    scheduler_.Abort(sid);
    speculator_.Forget(sid);
  }
}

// Window paging: the local layer groups' tables of a sequence, from its
// blocks' local pages (-1 where the window has left a block).
std::span<const int32_t> Engine::LocalTables(const SeqState& st, std::vector<int32_t>* tables) {
  const int groups = pool_.locals_per_block();
  const size_t n = st.blocks.size();
  tables->assign(n * static_cast<size_t>(groups), -1);
  for (size_t b = 0; b < n; ++b) {
    const auto locals = pool_.Locals(st.blocks[b]);
    for (size_t g = 0; g < locals.size(); ++g) (*tables)[g * n + b] = locals[g];
  }
  return *tables;
}

Status Engine::RunForward(const SchedulerOutput& so) {
  for (const auto& [src, dst] : so.block_copies) kv_.CopyBlock(src, dst);
  batch_.Clear();
  all_rows_.clear();
  if (local_tables_.size() < so.chunks.size()) local_tables_.resize(so.chunks.size());
  for (size_t i = 0; i < so.chunks.size(); ++i) {
    const ScheduledChunk& c = so.chunks[i];
    const SeqState* st = scheduler_.Find(c.id);
    const std::span<const int32_t> locals = LocalTables(*st, &local_tables_[i]);
    if (c.pos_begin < st->num_prompt) outputs_.NoteScheduled(*st);  // prefill: usage facts
    // Prompt logprobs (echo) need every position's row; nobody else pays.
    const bool all = c.pos_begin < st->num_prompt && outputs_.WantsAllLogits(c);
    all_rows_.push_back(all ? 1 : 0);
    if (!c.draft.empty()) {
      // A decode with draft tokens: every position's row is verified.
      draft_tokens_.assign(st->tokens.begin() + c.pos_begin,
                           st->tokens.begin() + c.pos_begin + c.n_tokens);
      draft_tokens_.insert(draft_tokens_.end(), c.draft.begin(), c.draft.end());
      batch_.Add(draft_tokens_, c.pos_begin, st->blocks, BatchSequence::Logits::kAll, locals);
      continue;
    }
    batch_.Add(std::span<const int32_t>(st->tokens).subspan(c.pos_begin, c.n_tokens), c.pos_begin,
               st->blocks,
               all        ? BatchSequence::Logits::kAll
               : c.sample ? BatchSequence::Logits::kLast
                          : BatchSequence::Logits::kNone,
               locals);
  }
  outputs_.PrefetchMasks(so.chunks, static_cast<size_t>(model_.config().vocab));
  const auto t_fwd = Clock::now();
  const Status fwd = model_.Forward(batch_, kv_, threads_, &logits_);
  if (!fwd.ok()) {
    outputs_.WaitForMasks();
    return fwd;
  }
  last_step_.forward_s = std::chrono::duration<double>(Clock::now() - t_fwd).count();
  last_step_.prefill_tokens = so.num_prefill_tokens;
  last_step_.decode_tokens = so.num_decode_tokens;
  last_step_.sequences = static_cast<int32_t>(so.chunks.size());
  return Status::Ok();
}

Status Engine::Step(std::vector<SequenceOutput>* outputs) {
  // Cancelled requests leave before any work is scheduled for them.
  ApplyCancels(outputs);
  Status status = Status::Ok();
  if (speculator_.enabled())
    speculator_.Propose(scheduler_, threads_, [this](int64_t id, std::vector<int32_t>* draft) {
      outputs_.TrimDraft(id, draft);
    });
  SchedulerOutput so = scheduler_.Schedule(Now());
  for (int64_t sid : so.expired)
    outputs_.FinishSequence(sid, FinishReason::kDeadline, scheduler_, outputs);
  last_step_ = {};
  if (so.empty()) {
    if (scheduler_.HasWork() && pool_.num_used() == 0)
      status = Internal("no sequence can be scheduled with an empty KV pool");
  } else {
    if (speculator_.enabled()) speculator_.CatchUp(so.chunks, scheduler_, threads_);
    status = RunForward(so);
    if (status.ok()) {
      const auto t_out = Clock::now();
      results_.clear();
      outputs_.Process(
          so.chunks, logits_, model_.config().vocab, scheduler_, [this] { return next_seq_id_++; },
          &results_, outputs, all_rows_);
      last_step_.grammar_mask_s = outputs_.TakeGrammarMaskTimes();
      if (speculator_.enabled()) {
        for (const SeqResult& r : results_)  // forks of a speculating sequence speculate too
          if (speculator_.Tracks(r.id))
            for (const auto& [child, token] : r.forks) speculator_.TrackFork(r.id, child);
        const double out_s = std::chrono::duration<double>(Clock::now() - t_out).count();
        speculator_.Observe(so.chunks, results_, so.num_decode_tokens, so.num_prefill_tokens,
                            last_step_.forward_s + out_s, &last_step_);
      }
      scheduler_.UpdateFromOutput(so, results_);
    }
  }
  // Finished sequences give their blocks back (no-op unless still held).
  ReleaseFinished();
  if (kv_disk_)
    kv_disk_->store().TakeLatencies(&last_step_.kv_disk_read_s, &last_step_.kv_disk_write_s);
  return status;
}

}  // namespace brisk
