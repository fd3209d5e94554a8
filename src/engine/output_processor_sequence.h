// OutputProcessor's per-sample state (output_processor.h), shared by the
// files that implement it (output_processor.cc, output_processor_spec.cc).
// Private to the output processor: nothing else includes it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/output_processor.h"
#include "grammar/constraint.h"
#include "grammar/token_constraint.h"

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
        trigger(r.constraint_trigger),
        logprobs(r.logprobs),
        prompt_logprobs(r.logprobs >= 0 && r.prompt_logprobs) {
    // A lazy constraint's matcher starts when its trigger fires (PushLazy).
    if (constraint && trigger.text.empty()) matcher = MakeTokenConstraint(constraint);
    if (constraint && !trigger.text.empty()) lazy = std::make_unique<LazyTriggerMatcher>(trigger);
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
    proto.constraint_trigger = trigger;
    proto.logprobs = logprobs;  // the prompt records are copied below
    auto child = std::make_unique<Sequence>(child_id, request_id, k, proto, tok);
    child->n_prompt = n_prompt;
    if (matcher) child->matcher = matcher->Clone();
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
  int32_t accepted_draft = 0;  // speculative decoding: generated tokens that were drafts
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
  // The constraint's state; null when unconstrained (and, for a lazy
  // constraint, until its trigger).
  std::unique_ptr<TokenConstraint> matcher;
  std::vector<uint8_t> prefetched_mask;      // the next sample's mask, computed ahead
  bool mask_ready = false;                   // prefetched_mask is for the next sample
  ConstraintTrigger trigger;                 // lazy constraint: its trigger
  std::unique_ptr<LazyTriggerMatcher> lazy;  // lazy constraint: watches for the trigger
  int logprobs;                              // top alternatives per token; -1 = no logprobs
  bool prompt_logprobs;                      // still to record / send the prompt's records
  int32_t prompt_lp_next = 1;                // the next prompt position to record
  std::vector<TokenLogprob> prompt_lps;
  bool finished = false;
  int32_t cached_tokens = 0;  // from the scheduler, kept by NoteScheduled
  double queue_s = -1;
};

}  // namespace brisk
