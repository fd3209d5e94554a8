// A flat batch for one forward pass: tokens of many sequences, each sequence
// a contiguous slice, prefill chunks and single decode tokens mixed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace brisk {

struct BatchSequence {
  int32_t token_begin = 0;  // index of the sequence's first token in Batch::tokens
  int32_t n_tokens = 0;     // tokens of this sequence in the batch (>= 1)
  int32_t pos_begin = 0;    // position of its first token (= tokens already in the KV cache)
  std::span<const int32_t> block_table;  // KV blocks of the sequence, in position order
  // Sliding-window paging (KvCacheShape::local_groups): each local layer
  // group's table, block_table.size() entries each, one after the other;
  // -1 for blocks the window has left. Empty without paging.
  std::span<const int32_t> local_tables;
  // Which logits to return: none, the last token's, or every token's (eval).
  enum class Logits : uint8_t { kNone, kLast, kAll } logits = Logits::kLast;
};

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<BatchSequence> seqs;

  void Clear() {
    tokens.clear();
    seqs.clear();
  }
  // Appends a sequence's tokens; returns its index in seqs.
  size_t Add(std::span<const int32_t> toks, int32_t pos_begin, std::span<const int32_t> blocks,
             BatchSequence::Logits logits = BatchSequence::Logits::kLast,
             std::span<const int32_t> local_tables = {}) {
    BatchSequence s;
    s.token_begin = static_cast<int32_t>(tokens.size());
    s.n_tokens = static_cast<int32_t>(toks.size());
    s.pos_begin = pos_begin;
    s.block_table = blocks;
    s.local_tables = local_tables;
    s.logits = logits;
    tokens.insert(tokens.end(), toks.begin(), toks.end());
    seqs.push_back(s);
    return seqs.size() - 1;
  }
  // Rows of logits the forward pass produces, in sequence order.
  int64_t NumLogitRows() const {
    int64_t n = 0;
    for (const auto& s : seqs)
      n += s.logits == BatchSequence::Logits::kAll    ? s.n_tokens
           : s.logits == BatchSequence::Logits::kLast ? 1
                                                      : 0;
    return n;
  }
};

}  // namespace brisk
