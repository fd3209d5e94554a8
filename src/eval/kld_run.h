// Runs a model over an evaluation text the way llama.cpp's llama-perplexity
// does, so that perplexity and KL divergence from the two are comparable:
// the text's tokens (BOS first when the model adds one) are cut into chunks
// of n_ctx tokens, the first token of every chunk is replaced by BOS (when
// the model adds one), each chunk is evaluated from an empty context, and
// only the second half of each chunk is scored: positions j in
// [n_ctx/2, n_ctx - 2], whose logits predict token j + 1. Every scored
// position thus sees at least n_ctx/2 tokens of context.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "model/model.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk::eval {

struct TextChunks {
  std::vector<int32_t> tokens;  // n_chunks * n_ctx, as tokenized (not BOS-replaced)
  int n_ctx = 0;
  int n_chunks = 0;
  std::optional<int32_t> bos;  // replaces each chunk's first token when set
  int first() const { return n_ctx / 2; }
  int scored_per_chunk() const { return n_ctx - 1 - first(); }
  int64_t scored() const { return int64_t{n_chunks} * scored_per_chunk(); }
  // The token that follows scored position j of chunk c.
  int32_t next_token(int c, int j) const { return tokens[static_cast<size_t>(c) * n_ctx + j + 1]; }
};

// Cuts `text_tokens` into whole chunks (at most max_chunks; 0 = all).
// InvalidArgument when n_ctx is below 16 or the text is shorter than one chunk.
Expected<TextChunks> MakeChunks(std::vector<int32_t> text_tokens, int n_ctx, int max_chunks,
                                std::optional<int32_t> bos);

// Calls `on_row(chunk, j, logits)` for every scored position in order
// (logits: vocab floats), and `on_chunk(chunk)` after each chunk. Stops at
// the first error either returns.
using ScoredRowFn = std::function<Status(int chunk, int j, const float* logits)>;
// The KV cache holds `kv_type` (cache.kv_precision).
Status ScoreChunks(Model& model, ThreadPool& pool, const TextChunks& chunks,
                   const ScoredRowFn& on_row, const std::function<void(int chunk)>& on_chunk = {},
                   KvType kv_type = KvType::kF16);

}  // namespace brisk::eval
