#include "eval/kld_run.h"

#include <algorithm>
#include <numeric>

namespace brisk::eval {

namespace {
// Scored positions are computed this many at a time, so the logits buffer
// stays small even for a 262k-token vocabulary.
constexpr int kScoredPiece = 64;
constexpr int kBlockSize = 16;
}  // namespace

Expected<TextChunks> MakeChunks(std::vector<int32_t> text_tokens, int n_ctx, int max_chunks,
                                std::optional<int32_t> bos) {
  if (n_ctx < 16) return InvalidArgument("the context (--ctx) must be at least 16 tokens");
  const int64_t whole = static_cast<int64_t>(text_tokens.size()) / n_ctx;
  if (whole < 1)
    return InvalidArgument("the text has {} tokens, fewer than one chunk of {} (--ctx)",
                           text_tokens.size(), n_ctx);
  TextChunks c;
  c.n_ctx = n_ctx;
  c.n_chunks = static_cast<int>(max_chunks > 0 ? std::min<int64_t>(whole, max_chunks) : whole);
  text_tokens.resize(static_cast<size_t>(c.n_chunks) * n_ctx);
  c.tokens = std::move(text_tokens);
  c.bos = bos;
  return c;
}

Status ScoreChunks(Model& model, ThreadPool& pool, const TextChunks& chunks,
                   const ScoredRowFn& on_row, const std::function<void(int chunk)>& on_chunk,
                   KvType kv_type) {
  const int n_ctx = chunks.n_ctx;
  const int vocab = model.config().vocab;
  if (model.config().context_length > 0 && n_ctx > model.config().context_length)
    return InvalidArgument("--ctx {} is longer than the model's context ({})", n_ctx,
                           model.config().context_length);
  const int n_blocks = (n_ctx + kBlockSize - 1) / kBlockSize;
  KvCache kv(model.kv_shape(kBlockSize, kv_type), n_blocks);
  std::vector<int32_t> blocks(n_blocks);
  std::iota(blocks.begin(), blocks.end(), 0);
  std::vector<int32_t> toks(n_ctx);
  std::vector<float> logits;
  Batch batch;
  const int first = chunks.first();
  for (int c = 0; c < chunks.n_chunks; ++c) {
    std::copy_n(chunks.tokens.begin() + static_cast<ptrdiff_t>(c) * n_ctx, n_ctx, toks.begin());
    if (chunks.bos) toks[0] = *chunks.bos;
    // The unscored first half: context only.
    batch.Clear();
    batch.Add(std::span<const int32_t>(toks.data(), first), 0, blocks,
              BatchSequence::Logits::kNone);
    RETURN_IF_ERROR(model.Forward(batch, kv, pool, &logits));
    for (int p = first; p < n_ctx - 1; p += kScoredPiece) {
      const int n = std::min(kScoredPiece, n_ctx - 1 - p);
      batch.Clear();
      batch.Add(std::span<const int32_t>(toks.data() + p, n), p, blocks,
                BatchSequence::Logits::kAll);
      RETURN_IF_ERROR(model.Forward(batch, kv, pool, &logits));
      for (int i = 0; i < n; ++i)
        RETURN_IF_ERROR(on_row(c, p + i, logits.data() + static_cast<size_t>(i) * vocab));
    }
    if (on_chunk) on_chunk(c);
  }
  return Status::Ok();
}

}  // namespace brisk::eval
