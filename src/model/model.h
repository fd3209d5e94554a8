// Decoder-only transformers over GGUF weights: RMSNorm, RoPE (file's theta,
// linear scaling, optional rope_freqs), grouped-query attention over the
// paged KV cache, a gated MLP, tied or separate output. What differs between
// architectures is data (ModelConfig's recipe fields, set from the GGUF's
// architecture name), not another forward pass:
//  - llama / mistral (SmolLM2, Llama 2/3, Mistral): SwiGLU, pair-wise RoPE;
//  - gemma3: embeddings scaled by sqrt(d_model), RMSNorm of each q/k head,
//    norms after attention and after the MLP too, GELU-gated MLP, NeoX RoPE,
//    sliding-window layers (by default every sixth layer global) with their
//    own RoPE base, optional final logit softcapping;
//  - qwen2: biases on the q, k and v projections, NeoX RoPE;
//  - qwen3: RMSNorm of each q/k head (head_dim from key_length), NeoX RoPE.
// The table of recipes is in arch_recipe.h. A Model is its config
// (model_config.h, from the metadata), its weights (model_weights.h, bound to
// the mapped file) and the forward pass here.
//
// Forward() takes a flat batch of tokens from many sequences (prefill chunks
// and decode tokens mixed); it writes each token's K/V into its sequence's
// KV slots, then attends over the sequence's cached positions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/batch.h"
#include "model/gguf.h"
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/rope_scaling.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

struct LoadOptions {
  bool allow_repack = true;  // let the kernels repack weights for speed
  // Reference mode: dequantize every matrix to f32 at load, so matmuls run
  // without 8-bit activation rounding (4-8x the memory; for evaluation).
  bool dequantize_to_f32 = false;
  // Load-time precision: every matrix converted (see LoadPrecision); its `to`
  // unset = as the file stores them.
  LoadPrecision precision;
  // The serving profile's RoPE scaling (model.rope_scaling), replacing the
  // file's: its original_context 0 = the file's trained context, factor 0 =
  // context_tokens / original_context. The model's context_length becomes
  // original_context x factor.
  std::optional<RopeScaling> rope_scaling;
  int64_t context_tokens = 0;
};

class Model {
 public:
  static Expected<std::unique_ptr<Model>> Load(const std::string& path,
                                               const LoadOptions& options = {});
  // Binds an already-open file (the model keeps it alive).
  static Expected<std::unique_ptr<Model>> FromGguf(std::shared_ptr<const GgufFile> file,
                                                   const LoadOptions& options = {});
  ~Model();

  const ModelConfig& config() const { return cfg_; }
  const GgufFile& file() const { return *file_; }
  // window_paging (sliding-window models): pages of as many layers as there
  // are global layers; group 0 the global layers, then the local layers in
  // groups of that size (the last one padded), so blocks the window has left
  // can give the local layers' pages back (engine/kv_block_pool.h).
  KvCacheShape kv_shape(int block_size = 16, KvType type = KvType::kF16,
                        bool window_paging = false) const;
  // Bytes of weights read per decoded token (for bandwidth reports).
  int64_t weight_bytes() const { return weights_.bytes; }

  // Runs the batch. Logits rows (vocab floats each) are written to `logits`
  // in the order Batch::NumLogitRows() describes. Errors: positions past the
  // context, block tables too short, token ids out of range.
  // Not thread-safe: one engine thread calls it (scratch buffers are reused).
  Status Forward(const Batch& batch, KvCache& kv, ThreadPool& pool, std::vector<float>* logits);

  // Wall-clock seconds Forward has spent in attention (scores, softmax,
  // weighted V sum; not the Q/K/V/O projections) since load: bench-model's
  // attention share of prefill. Read on the thread that calls Forward.
  double attention_seconds() const { return attention_ns_ * 1e-9; }

 private:
  struct Scratch;

  Model() = default;
  Status Bind(const LoadOptions& options);
  Status ValidateBatch(const Batch& batch, const KvCache& kv) const;
  void Attention(int layer, const Batch& batch, const std::vector<int32_t>& pos, KvCache& kv,
                 ThreadPool& pool);

  std::shared_ptr<const GgufFile> file_;
  ModelConfig cfg_;
  ModelWeights weights_;
  std::vector<float> inv_freq_, inv_freq_local_;
  float rope_magnitude_ = 1.f;  // yarn: cos and sin of the global layers times this
  int64_t attention_ns_ = 0;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace brisk
