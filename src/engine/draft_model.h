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
// The draft catches up on a prompt while the target prefills it: a request
// with k = 0 computes prompt positions only (no logits, up to the one
// before the newest token), within a budget per Propose (the speculator
// gives the step's prefill tokens), so a long prompt never stalls the batch
// for the draft's prefill. A decoding sequence the
// draft has not caught up with yet (the policy had not let it catch up, or
// it outgrew the draft's KV) catches up kMaxCatchUpTokens per step and
// drafts once it has.
//
// Prefix cache: the draft's KV pool has a PrefixCache of its own, keyed
// like the target's (prefix_cache.h: chained block hashes from the
// request's salt, so tenants never share draft blocks either). A new
// sequence takes the longest cached run of full blocks of its tokens, and
// full blocks of verified tokens are published as they are computed, so a
// conversation's earlier turns or a shared system prompt are computed by
// the draft once. Only blocks before the newest token are published: the
// draft recomputes from at most the newest token, so it never writes into
// a block another sequence may share.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv_block_pool.h"
#include "engine/prefix_cache.h"
#include "engine/spec_policy.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

// Ok when `draft` can draft for `target`: the same vocabulary, token by token
// (tokenizer.ggml.tokens), so a draft token id means the same text.
Status CheckDraftVocab(const Model& target, const Model& draft);

class DraftModelRunner {
 public:
  static constexpr int kMaxCatchUpTokens = 256;

  // `num_blocks` KV blocks of `block_size` positions in the draft's shape;
  // `prefix_cache`: reuse blocks across sequences (off where the target's
  // prefix cache is off).
  DraftModelRunner(Model& model, int block_size, int64_t num_blocks, bool prefix_cache = true);

  struct Request {
    int64_t seq_id = 0;
    std::span<const int32_t> tokens;  // the sequence so far (prompt + output)
    int k = 0;                        // draft tokens wanted; 0: catch up on the prompt only
    BlockHash salt;                   // root of the sequence's block hashes (its cache salt)
    std::vector<int32_t> draft;       // out: the proposal (empty: none this step)
  };
  // Drafts for every request, batched: one forward over all sequences'
  // pending tokens, then k - 1 single-token rounds. A sequence still
  // catching up, or one whose KV blocks ran out (it is forgotten and starts
  // over later), gets no draft.
  // Prompt-only requests (k = 0) compute at most `catch_up_budget`
  // positions in all.
  Status Propose(std::span<Request> requests, ThreadPool& pool,
                 size_t catch_up_budget = kMaxCatchUpTokens);
  // The sequence ended: its blocks are free again.
  void Forget(int64_t seq_id);
  // The draft has read the sequence's prompt and drafted for it: only the
  // tokens verified since its last draft are left to read.
  bool Drafting(int64_t seq_id) const {
    const auto it = seqs_.find(seq_id);
    return it != seqs_.end() && it->second.drafted;
  }
  // Tokens of `tokens` the draft would have to compute before it can draft
  // for the sequence (its prompt catch-up), counting what its KV or the
  // prefix cache already holds.
  int64_t PendingTokens(int64_t seq_id, std::span<const int32_t> tokens,
                        const BlockHash& salt) const;

  // Measured draft forward time by batch tokens.
  const StepCostModel& cost() const { return cost_; }
  // Bytes of weights the draft reads per token (for the policy's prior).
  int64_t weight_bytes() const { return model_.weight_bytes(); }
  int64_t tracked() const { return static_cast<int64_t>(seqs_.size()); }
  const KvBlockPool& pool() const { return pool_; }
  const PrefixCache& prefix_cache() const { return prefix_cache_; }
  // Prompt positions computed by the draft (catch-ups, before drafting) and
  // positions taken from its prefix cache instead, since construction.
  int64_t catch_up_tokens() const { return catch_up_tokens_; }
  int64_t cached_tokens() const { return cached_tokens_; }

 private:
  struct Seq {
    std::vector<int32_t> blocks;    // block table
    std::vector<int32_t> cached;    // tokens whose KV is written, by position
    std::vector<BlockHash> hashes;  // of full blocks of the sequence's tokens
    int32_t num_published = 0;      // leading blocks published to the prefix cache
    bool drafted = false;           // past its catch-up: it has drafted once
  };
  // A sequence new to the draft: the longest cached run of its full blocks
  // (never the block of its newest token).
  void AcquirePrefix(const Request& r, Seq& s);
  // Publishes s's full blocks of verified tokens below `computed` positions.
  void Publish(const Request& r, Seq& s, size_t computed);
  // Blocks for positions [0, n); false (and the sequence forgotten) when
  // the pool is out of them.
  bool Reserve(int64_t seq_id, Seq& s, int64_t n);
  Status RunForward(ThreadPool& pool);
  int32_t Argmax(size_t row) const;

  Model& model_;
  const int block_size_;
  KvCache kv_;
  KvBlockPool pool_;
  PrefixCache prefix_cache_;
  const bool use_prefix_cache_;
  std::unordered_map<int64_t, Seq> seqs_;
  Batch batch_;
  std::vector<float> logits_;
  StepCostModel cost_;
  // Per round: the request index of each batch sequence with a logits row.
  std::vector<size_t> row_owner_;
  // Round 0: per batch sequence, its request and the positions it computes to.
  std::vector<std::pair<size_t, size_t>> computed_to_;
  int64_t catch_up_tokens_ = 0;
  int64_t cached_tokens_ = 0;
};

}  // namespace brisk
