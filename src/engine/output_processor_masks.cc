// OutputProcessor's grammar token masks: computing one, advancing a
// sequence's grammar by an emitted token, and prefetching a step's masks on
// the mask thread while the forward pass runs.
//
// Why a prefetch is exact: a plain decode's mask depends only on the grammar
// state after the tokens already emitted, which the previous step fixed;
// nothing the forward pass computes changes it. So for every chunk that will
// sample one token without drafts, the mask can be computed before the
// logits exist. Drafted chunks need the state after each draft token, which
// verification walks (output_processor_spec.cc), and forks get their masks
// when they are created: both compute theirs in Process().
#include <chrono>

#include "engine/output_processor.h"
#include "engine/output_processor_sequence.h"

namespace brisk {

void OutputProcessor::ComputeMask(TokenConstraint& grammar, size_t vocab,
                                  std::vector<uint8_t>* out) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!maskers_) {
    token_trie_ = token_trie_future_.get();
    maskers_ = std::make_unique<TokenMaskers>(token_trie_.get());
  }
  grammar.FillMask(*maskers_, &mask_bits_);
  ExpandMask(mask_bits_, vocab, out);
  mask_times_.push_back(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void OutputProcessor::SetGrammarMask(TokenConstraint& grammar, Sampler& sampler, size_t vocab) {
  ComputeMask(grammar, vocab, &mask_bytes_);
  sampler.SetMask(mask_bytes_);
}

void OutputProcessor::SetSampleMask(Sequence& s, size_t vocab) {
  if (s.mask_ready) {  // prefetched during the forward pass
    s.mask_ready = false;
    s.sampler.SetMask(s.prefetched_mask);
    return;
  }
  SetGrammarMask(*s.matcher, s.sampler, vocab);
}

void OutputProcessor::AdvanceGrammar(Sequence& s, int32_t tok) {
  // The mask allowed `tok`: its bytes advance the grammar (end tokens have none).
  s.mask_ready = false;  // a prefetched mask was for the state before
  if (tok < 0 || tokenizer_.IsEog(tok) || !s.matcher) return;
  s.matcher->AdvanceBytes(tokenizer_.TokenToPiece(tok));
}

void OutputProcessor::PrefetchMasks(std::span<const ScheduledChunk> chunks, size_t vocab) {
  if (!mask_overlap_) return;
  prefetch_.clear();
  for (const ScheduledChunk& c : chunks) {
    if (!c.sample || !c.draft.empty()) continue;
    auto it = seqs_.find(c.id);
    if (it == seqs_.end()) continue;
    Sequence& s = *it->second;
    if (s.finished || !s.matcher) continue;
    prefetch_.push_back(&s);
  }
  if (prefetch_.empty()) return;
  if (!mask_thread_) mask_thread_ = std::make_unique<BackgroundTask>();
  // Until WaitForMasks(), the mask thread alone touches the maskers, their
  // scratch, mask_times_ and these sequences' matchers and masks; the
  // engine thread runs the forward pass.
  prefetching_ = true;
  mask_thread_->Start([this, vocab] {
    for (Sequence* s : prefetch_) {
      ComputeMask(*s->matcher, vocab, &s->prefetched_mask);
      s->mask_ready = true;
    }
  });
}

void OutputProcessor::WaitForMasks() {
  if (!prefetching_) return;
  mask_thread_->Wait();
  prefetching_ = false;
}

}  // namespace brisk
