// Decoder-only transformers over GGUF weights: RMSNorm, RoPE (file's theta,
// linear scaling, optional rope_freqs), grouped-query attention over the
// paged KV cache, a gated MLP, tied or separate output. What differs between
// architectures is data (ModelConfig's recipe fields, set from the GGUF's
// architecture name), not another forward pass:
//  - llama / mistral (SmolLM2, Llama 2/3, Mistral): SwiGLU, pair-wise RoPE;
//  - gemma3: embeddings scaled by sqrt(d_model), RMSNorm of each q/k head,
//    norms after attention and after the MLP too, GELU-gated MLP, NeoX RoPE,
//    sliding-window layers (every sixth layer global) with their own RoPE base;
//  - qwen2: biases on the q, k and v projections, NeoX RoPE;
//  - qwen3: RMSNorm of each q/k head (head_dim from key_length), NeoX RoPE.
// The table of recipes is in arch_recipe.h.
//
// Forward() takes a flat batch of tokens from many sequences (prefill chunks
// and decode tokens mixed); it writes each token's K/V into its sequence's
// KV slots, then attends over the sequence's cached positions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/batch.h"
#include "model/gguf.h"
#include "model/kv_cache.h"
#include "model/rope_scaling.h"
#include "tensor/kernels.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

struct ModelConfig {
  std::string arch;
  int n_layers = 0;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int d_ff = 0;
  int vocab = 0;
  int context_length = 0;
  int rope_dim = 0;
  float rope_theta = 10000.f;
  RopeScaling rope_scaling;  // the global layers' (the file's, or LoadOptions')
  float rms_eps = 1e-5f;
  bool tied_output = false;

  // The architecture's recipe.
  enum class Activation : uint8_t { kSilu, kGeluTanh };
  enum class Rope : uint8_t { kPairs, kNeox };  // (x[2i], x[2i+1]) or (x[i], x[i + d/2])
  Activation activation = Activation::kSilu;
  Rope rope = Rope::kPairs;
  float embed_scale = 1.f;           // token embeddings are multiplied by this
  bool qkv_bias = false;             // biases added to q, k, v (attn_{q,k,v}.bias)
  bool qk_norm = false;              // RMSNorm of each query and key head (attn_{q,k}_norm)
  bool post_norms = false;           // RMSNorm of the attention and MLP outputs before the residual
  int sliding_window = 0;            // positions a local layer sees (0: every layer is global)
  int global_every = 0;              // with a window: layer l is global when (l + 1) % this == 0
  float rope_theta_local = 10000.f;  // RoPE base of the local layers
  bool IsLocal(int layer) const {
    return sliding_window > 0 && (global_every <= 0 || (layer + 1) % global_every != 0);
  }
};

// Writes one row of n values in a matrix format's layout.
using RowQuantizer = void (*)(const float* src, void* dst, int64_t n);

// A load-time weight precision (model.precision / --precision): the format
// every matrix is converted to and the quantizer that writes its rows.
struct LoadPrecision {
  std::optional<DType> to;  // unset: as the file stores them ("native")
  // Null: the format's reference quantizer. int8 and int4 write Q8_0 / Q4_0
  // blocks with their own scale granularity (quant_ref.h).
  RowQuantizer quantize_row = nullptr;
};

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

// model.precision / --precision: "native" -> unset; f32, f16, bf16, q8_0,
// q4_0 -> that ggml format (its reference quantizer); int8 -> symmetric int8
// with one scale per output channel (Q8_0 blocks, Q8_0 kernels); int4 ->
// symmetric int4 with one scale per 128 values (Q4_0 blocks, Q4_0 kernels);
// fp8 -> E4M3 weights with one scale per output channel (BlockFP8, decoded
// to f32 in the kernels; activations stay f32). Any other name: Unimplemented.
Expected<LoadPrecision> LoadPrecisionType(std::string_view precision);

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
  int64_t weight_bytes() const { return weight_bytes_; }

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
  struct Layer {
    const float* attn_norm = nullptr;
    const float* ffn_norm = nullptr;
    const float* bq = nullptr;  // qkv_bias
    const float* bk = nullptr;
    const float* bv = nullptr;
    const float* q_norm = nullptr;  // qk_norm
    const float* k_norm = nullptr;
    const float* post_attn_norm = nullptr;  // post_norms
    const float* post_ffn_norm = nullptr;
    MatMulWeight wq, wk, wv, wo, w_gate, w_up, w_down;
  };
  struct Scratch;

  Model() = default;
  Status Bind(const LoadOptions& options);
  Status ValidateBatch(const Batch& batch, const KvCache& kv) const;
  void Attention(int layer, const Batch& batch, const std::vector<int32_t>& pos, KvCache& kv,
                 ThreadPool& pool);

  std::shared_ptr<const GgufFile> file_;
  ModelConfig cfg_;
  const GgufTensorInfo* tok_embd_ = nullptr;
  DType tok_embd_type_ = DType::kF32;
  const float* output_norm_ = nullptr;
  const float* rope_freqs_ = nullptr;  // optional per-dimension divisors
  MatMulWeight output_;
  std::vector<Layer> layers_;
  std::vector<float> inv_freq_, inv_freq_local_;
  float rope_magnitude_ = 1.f;  // yarn: cos and sin of the global layers times this
  int64_t weight_bytes_ = 0;
  int64_t attention_ns_ = 0;
  std::unique_ptr<Scratch> scratch_;
  std::vector<std::unique_ptr<uint8_t[]>> converted_weights_;  // dequantize_to_f32 / precision
};

}  // namespace brisk
