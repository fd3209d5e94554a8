// The draft-model drafter for speculative decoding: a second, smaller (or
// lower-precision) GGUF with the target's exact vocabulary proposes the next
// tokens of each speculating sequence by greedy decoding, batched over the
// sequences that draft in a step. It keeps its own paged KV cache: per
// sequence, the tokens whose KV it holds. When the target rejects part of a
// draft, the next Propose finds the longest prefix the draft's cache shares
// with the sequence and recomputes from there (the rejected positions are
// simply overwritten; no block is freed for them).
//
// Greedy drafts are deterministic proposals (q is one-hot), so the verifier's
// rejection sampler (rejection_sampler.h) keeps the target's distribution
// exactly for sampled requests too; they only accept less often.
//
// A sequence the draft has not seen yet (its prompt) is caught up in chunks
// of at most kMaxCatchUpTokens per step, so a long prompt never stalls the
// whole batch for the draft's prefill; it drafts once it has caught up.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv_block_pool.h"
#include "engine/spec_policy.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/llama_model.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

// Ok when `draft` can draft for `target`: the same vocabulary, token by token
// (tokenizer.ggml.tokens), so a draft token id means the same text.
Status CheckDraftVocab(const LlamaModel& target, const LlamaModel& draft);

class DraftModelRunner {
 public:
  static constexpr int kMaxCatchUpTokens = 256;

  // `num_blocks` KV blocks of `block_size` positions in the draft's shape.
  DraftModelRunner(LlamaModel& model, int block_size, int64_t num_blocks);

  struct Request {
    int64_t seq_id = 0;
    std::span<const int32_t> tokens;  // the sequence so far (prompt + output)
    int k = 0;                        // draft tokens wanted
    std::vector<int32_t> draft;       // out: the proposal (empty: none this step)
  };
  // Drafts for every request, batched: one forward over all sequences'
  // pending tokens, then k - 1 single-token rounds. A sequence still
  // catching up, or one whose KV blocks ran out (it is forgotten and starts
  // over later), gets no draft.
  Status Propose(std::span<Request> requests, ThreadPool& pool);
  // The sequence ended: its blocks are free again.
  void Forget(int64_t seq_id);

  // Measured draft forward time by batch tokens.
  const StepCostModel& cost() const { return cost_; }
  // Bytes of weights the draft reads per token (for the policy's prior).
  int64_t weight_bytes() const { return model_.weight_bytes(); }
  int64_t tracked() const { return static_cast<int64_t>(seqs_.size()); }
  const KvBlockPool& pool() const { return pool_; }

 private:
  struct Seq {
    std::vector<int32_t> blocks;  // block table
    std::vector<int32_t> cached;  // tokens whose KV is written, by position
  };
  // Blocks for positions [0, n); false (and the sequence forgotten) when
  // the pool is out of them.
  bool Reserve(int64_t seq_id, Seq& s, int64_t n);
  Status RunForward(ThreadPool& pool);
  int32_t Argmax(size_t row) const;

  LlamaModel& model_;
  const int block_size_;
  KvCache kv_;
  KvBlockPool pool_;
  std::unordered_map<int64_t, Seq> seqs_;
  Batch batch_;
  std::vector<float> logits_;
  StepCostModel cost_;
  // Per round: the request index of each batch sequence with a logits row.
  std::vector<size_t> row_owner_;
};

}  // namespace brisk
