// What goes into an engine and what comes out of it: plain data that crosses
// the engine-client seam (engine/engine_client.h) unchanged.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/lazy_constraint.h"
#include "engine/logprobs.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"

namespace brisk {

using Clock = std::chrono::steady_clock;

struct CompiledConstraint;  // grammar/constraint.h

enum class FinishReason { kNone, kStop, kLength, kCancelled, kDeadline, kError };
const char* FinishReasonName(FinishReason r);  // "stop", "length", "cancelled", "deadline", "error"

// One tokenized prompt with everything that decides its generation.
struct GenerationRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int max_tokens = 256;
  int n = 1;                            // samples; they share the prompt's KV blocks
  std::vector<std::string> stop;        // stop strings
  std::vector<int32_t> stop_token_ids;  // extra tokens that end generation (not emitted)
  bool ignore_eos = false;
  // Until a sample has generated this many tokens, end-of-generation and
  // stop tokens are masked out of sampling and stop strings do not match
  // (vLLM's min_tokens). 0..max_tokens.
  int min_tokens = 0;
  // On a stop string, the text keeps the stop string; on a stop token or an
  // end-of-generation token, the token's text (empty for control tokens
  // unless skip_special_tokens is false). vLLM's include_stop_str_in_output.
  bool include_stop_str_in_output = false;
  // Control tokens (<|im_end|>) produce no text; false renders their text.
  bool skip_special_tokens = true;
  Priority priority = Priority::kInteractive;
  std::optional<Clock::time_point> arrival;   // default: when the engine takes it
  std::optional<Clock::time_point> deadline;  // generation ends with kDeadline after it
  std::string cache_salt;                     // prefix-cache isolation (tenant)
  std::string tenant;  // fair share of running slots: the API key's tenant, else the client address
  // Structured output: every sample's text must be accepted by this grammar
  // (token masks before sampling; end-of-generation only where the grammar
  // can end). Null = unconstrained, at no per-step cost. Its `spec` is the
  // plain data to send across a process seam (recompile there).
  std::shared_ptr<const CompiledConstraint> constraint;
  // With `constraint` and a trigger: the constraint is lazy
  // (engine/lazy_constraint.h): free text until the trigger appears in the
  // output, the constraint from there on (tool_choice "auto").
  ConstraintTrigger constraint_trigger;
  // Log probabilities (engine/logprobs.h: of the raw model distribution).
  // -1 = none; k in 0..kMaxLogprobsTop = each sampled token's log p and the
  // k most likely tokens at its position.
  int logprobs = -1;
  // With logprobs >= 0 (completions' echo): the prompt's tokens get records
  // too (every prompt position's logits are computed, and the prompt is
  // never served from the prefix cache, so all of them exist).
  bool prompt_logprobs = false;
  // Speculative decoding (when the engine has it on) may draft for this
  // request; false opts out. The output distribution is the same either way.
  bool speculate = true;
};

// What one sample of a request produced in one step. Usage and timings are
// set on the sample's finished output.
struct SequenceOutput {
  int64_t request_id = 0;
  int index = 0;  // which of the request's n samples
  std::vector<int32_t> new_tokens;
  std::string text;  // text completed this step (never half a UTF-8 char)
  // Lazy constraint: where in `text` the constrained part begins (the
  // trigger fired in this output; the text before is free content). Every
  // later output's text is constrained. -1: not in this output.
  int64_t constrained_from = -1;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;      // prompt tokens served from the prefix cache
  int32_t completion_tokens = 0;  // of this sample
  // Speculative decoding: completion tokens that were accepted draft tokens.
  int32_t accepted_draft_tokens = 0;
  double queue_s = -1;  // arrival -> first scheduled
  // With GenerationRequest::logprobs >= 0: one record per token of
  // new_tokens whose text belongs to the output, in order (a stop or
  // end-of-generation token that ends the sample without text has none).
  std::vector<TokenLogprob> logprobs;
  // With prompt_logprobs, once, on each sample's first output with tokens:
  // one record per prompt token (the first has no context: logprob 0 and
  // no alternatives, which the API sends as null).
  std::vector<TokenLogprob> prompt_logprobs;
};

// Per-step numbers for metrics.
struct StepStats {
  double forward_s = 0;
  int32_t prefill_tokens = 0;
  int32_t decode_tokens = 0;
  int32_t sequences = 0;
  // Time of each token mask computed this step (constrained sequences only).
  std::vector<double> grammar_mask_s;
  // Speculative decoding this step.
  int32_t spec_eligible = 0;  // speculating sequences decoding this step
  double spec_draft_s = 0;    // time the draft model took this step
  // Prompt positions the draft model computed before drafting (catch-ups),
  // and those it found in its prefix cache instead.
  int64_t spec_draft_prompt_tokens = 0;
  int64_t spec_draft_cached_tokens = 0;
  int32_t spec_drafts = 0;        // sequences that verified a draft
  int32_t spec_draft_tokens = 0;  // draft tokens verified
  int32_t spec_accepted_tokens = 0;
  std::vector<int32_t> spec_accepted_per_pos;  // [i]: drafts whose position i was accepted
  // KV disk tier: seconds each block read (this step) and each block write
  // (the writer thread, since the last step) took.
  std::vector<double> kv_disk_read_s, kv_disk_write_s;
};

}  // namespace brisk
