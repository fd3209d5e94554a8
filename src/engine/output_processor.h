// Turns one step's logits into what each request sees: per-sequence sampler
// state, the incremental detokenizer, stop tokens and stop strings, length
// limits, and n > 1 forks. The engine step is
//
//   schedule -> forward -> OutputProcessor::Process -> scheduler.UpdateFromOutput
//
// and every way a sample can end (stop, length, cancel, deadline, error) goes
// through Finish(), which flushes held-back text and fills usage.
//
// Request options (GenerationRequest): before min_tokens, end-of-generation
// and stop tokens are masked to -inf ahead of the sampler and stop strings
// are not matched; include_stop_str_in_output keeps a matched stop string
// (or a stop token's text) in the output; skip_special_tokens = false lets
// control tokens produce their text.
//
// n > 1: a request starts as one sequence; when its prompt is computed, the
// other n - 1 samples Fork() from it (same prompt KV blocks, their own
// sampler seeded apart) and each draws its first token from the same logits.
//
// Engine-thread only: no locks.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/generation.h"
#include "engine/logprobs.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "engine/stop_matcher.h"
#include "grammar/token_constraint.h"
#include "grammar/token_mask.h"
#include "model/tokenizer.h"
#include "model/tokenizer_incremental.h"
#include "util/background_task.h"

namespace brisk {

class OutputProcessor {
 public:
  // context_limit: a sample also ends (kLength) when prompt + output reach it.
  OutputProcessor(const Tokenizer& tokenizer, int64_t context_limit);
  ~OutputProcessor();

  // A new request whose first sample runs as sequence `seq_id`.
  void Add(int64_t request_id, int64_t seq_id, const GenerationRequest& request);

  // Ends every unfinished sample of a request (cancel): one finished output
  // each, including samples not forked yet. Unknown requests are ignored.
  void FinishRequest(int64_t request_id, FinishReason reason, const Scheduler& scheduler,
                     std::vector<SequenceOutput>* outputs);
  // Ends one sequence the scheduler already ended on its own (deadline).
  void FinishSequence(int64_t seq_id, FinishReason reason, const Scheduler& scheduler,
                      std::vector<SequenceOutput>* outputs);

  // Samples every chunk with `sample` set, in order; the r-th such chunk owns
  // logits row r ([rows][vocab], modified in place). Fork ids come from
  // `new_seq_id`. Appends one SeqResult per sampled chunk (plus finishes of
  // forks that ended on their first token) for Scheduler::UpdateFromOutput.
  // `all_rows` (empty, or one entry per chunk): a chunk with a non-zero
  // entry owns one row per token (BatchSequence::Logits::kAll; its last row
  // is its sampling row), read for prompt logprobs.
  void Process(std::span<const ScheduledChunk> chunks, std::span<float> logits, int vocab,
               const Scheduler& scheduler, const std::function<int64_t()>& new_seq_id,
               std::vector<SeqResult>* results, std::vector<SequenceOutput>* outputs,
               std::span<const uint8_t> all_rows = {});
  // Whether the chunk computes prompt positions whose logits a
  // prompt-logprobs request still needs (then the forward pass must return
  // every position's row for it).
  bool WantsAllLogits(const ScheduledChunk& c) const;

  // Structured output: whether PrefetchMasks() overlaps the token masks
  // with the forward pass (the engine turns it on where a core is left
  // for it).
  void set_mask_overlap(bool on) { mask_overlap_ = on; }
  // Starts computing, on the mask thread, the token masks of the chunks
  // that will sample one token without drafts under a grammar (their state
  // is fixed before the forward pass); Process() waits for them. Nothing
  // else may be called until Process() or WaitForMasks().
  void PrefetchMasks(std::span<const ScheduledChunk> chunks, size_t vocab);
  // Waits for the masks PrefetchMasks() started (Process() does it).
  void WaitForMasks();

  // Speculative decoding under a structured-output constraint: cuts
  // `draft` before its first token the sequence's grammar rules out
  // (verification would reject it for certain: its position and every one
  // after it would be computed for nothing). Unconstrained: unchanged.
  void TrimDraft(int64_t seq_id, std::vector<int32_t>* draft);

  // Sequences that finished since the last call; their state is gone.
  std::vector<int64_t> TakeFinished();
  // Keeps what usage reports from the scheduler's state of a scheduled
  // sequence (cached prompt tokens, queue time), so a sequence the scheduler
  // drops on its own (deadline) still reports them.
  void NoteScheduled(const SeqState& state);
  // Sequences tracked, finished ones included until TakeFinished().
  size_t num_sequences() const { return seqs_.size(); }
  // Durations of the grammar token masks computed since the last call
  // (structured output; empty when no sequence is constrained).
  std::vector<double> TakeGrammarMaskTimes();

 private:
  struct Sequence;
  void Finish(Sequence& s, FinishReason reason, const Scheduler& scheduler, SequenceOutput* out);
  // Outputs for samples that were never forked (the request ended first).
  void FinishUnforked(Sequence& s, FinishReason reason, std::vector<SequenceOutput>* outputs);
  void Sample(Sequence& s, std::span<float> logits, std::span<const int32_t> history,
              const Scheduler& scheduler, SequenceOutput* out, SeqResult* result);
  // Emits a chosen token: counts it, its logprobs (from `raw_row`, the row
  // before any mask or penalty; empty without logprobs), stop and end
  // tokens, text through the stop strings, the length limits. `history_size`:
  // tokens the sequence had before it. True when the sample finished.
  bool Emit(Sequence& s, int32_t tok, std::span<const float> raw_row, size_t history_size,
            const Scheduler& scheduler, SequenceOutput* out);
  // Speculative decoding: verifies a decode chunk's draft tokens against its
  // rows ([1 + draft][vocab], modified) and emits the accepted ones and the
  // token after them (output_processor_spec.cc).
  void ProcessDrafted(const ScheduledChunk& c, std::span<float> rows, int vocab,
                      const Scheduler& scheduler, SequenceOutput* out, SeqResult* result);
  // Before min_tokens: end-of-generation (unless ignore_eos) and stop
  // tokens get -inf logits.
  void SuppressStops(const Sequence& s, std::span<float> logits) const;
  // Detokenizes `tok` into out->text through the stop strings (from
  // min_tokens on); true when a stop string matched.
  bool PushText(Sequence& s, int32_t tok, SequenceOutput* out);
  // Text through the stop strings (from min_tokens on); true on a stop.
  bool PushContent(Sequence& s, std::string_view piece, SequenceOutput* out);
  // Lazy constraint: text through the trigger matcher, then content through
  // PushContent; on the trigger, the grammar starts (engine/lazy_constraint.h).
  bool PushLazy(Sequence& s, std::string_view piece, SequenceOutput* out);
  void MarkFinished(Sequence& s);
  // Prompt logprobs from a chunk's rows: row j predicts position pos_begin + j + 1.
  void RecordPromptLogprobs(Sequence& s, const ScheduledChunk& c, std::span<const float> rows,
                            int vocab, const std::vector<int32_t>& tokens);
  // Structured output: the allowed-token mask of a grammar state, set on
  // `sampler` until its ClearMask() (the vocabulary's token trie is built
  // on the first use).
  void SetGrammarMask(TokenConstraint& grammar, Sampler& sampler, size_t vocab);
  // The mask bytes of a grammar state into *out (timed in mask_times_).
  void ComputeMask(TokenConstraint& grammar, size_t vocab, std::vector<uint8_t>* out);
  // A plain sample's mask on its sampler: the prefetched one, else computed.
  void SetSampleMask(Sequence& s, size_t vocab);
  // Advances the sequence's grammar (if any) by an emitted token's bytes.
  void AdvanceGrammar(Sequence& s, int32_t tok);

  const Tokenizer& tokenizer_;
  const int64_t context_limit_;
  std::unordered_map<int64_t, std::unique_ptr<Sequence>> seqs_;  // by sequence id
  std::unordered_map<int64_t, std::vector<int64_t>> request_seqs_;
  std::vector<int64_t> finished_;
  std::vector<float> fork_logits_;
  std::vector<int32_t> eog_ids_;  // the tokenizer's end-of-generation tokens
  // Structured output, built on the first constrained request.
  // Built on a background thread from construction on, so the first
  // constrained request does not stall a step (40 ms at 49k tokens, 215 ms
  // at 262k) unless it comes that early.
  std::future<std::unique_ptr<TokenTrie>> token_trie_future_;
  std::unique_ptr<TokenTrie> token_trie_;
  std::unique_ptr<TokenMaskers> maskers_;
  TokenBitmask mask_bits_;
  std::vector<uint8_t> mask_bytes_;  // the sampler's view during one Sample()
  std::vector<double> mask_times_;
  // Masks overlapped with the forward pass (output_processor_masks.cc).
  bool mask_overlap_ = false;
  bool prefetching_ = false;
  std::vector<Sequence*> prefetch_;
  std::unique_ptr<BackgroundTask> mask_thread_;  // last: joined before the state it uses goes
  // Logprobs: the sampled row before the sampler changes it, and scratch.
  std::vector<float> raw_row_;
  RowLogprobs row_logprobs_;
  // Speculative verification scratch: raw rows, per-row probabilities.
  std::vector<float> spec_raw_, spec_probs_, spec_row_, spec_scratch_;
  std::vector<int32_t> spec_history_;
};

}  // namespace brisk
