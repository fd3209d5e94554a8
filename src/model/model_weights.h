// A decoder's tensors, bound to the mapped GGUF file: norm vectors and
// biases point into the mapping (F32), matrices are MatMulWeights over the
// file's rows (repacked for the kernels when allowed) or over rows converted
// at load (reference mode, a load-time precision). Plain data; the forward
// pass (model.h) reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "model/gguf.h"
#include "model/model_config.h"
#include "tensor/kernels.h"
#include "util/status.h"

namespace brisk {

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

// model.precision / --precision: "native" -> unset; f32, f16, bf16, q8_0,
// q4_0 -> that ggml format (its reference quantizer); int8 -> symmetric int8
// with one scale per output channel (Q8_0 blocks, Q8_0 kernels); int4 ->
// symmetric int4 with one scale per 128 values (Q4_0 blocks, Q4_0 kernels);
// fp8 -> E4M3 weights with one scale per output channel (BlockFP8, decoded
// to f32 in the kernels; activations stay f32). Any other name: Unimplemented.
Expected<LoadPrecision> LoadPrecisionType(std::string_view precision);

struct LayerWeights {
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

struct ModelWeights {
  const GgufTensorInfo* tok_embd = nullptr;  // rows dequantized per token
  DType tok_embd_type = DType::kF32;
  const float* output_norm = nullptr;
  const float* rope_freqs = nullptr;  // optional per-dimension divisors
  MatMulWeight output;                // output.weight, or token_embd.weight when tied
  std::vector<LayerWeights> layers;
  int64_t bytes = 0;  // of matrices, read per decoded token (bandwidth reports)
  std::vector<std::unique_ptr<uint8_t[]>> converted;  // rows converted at load
};

// Binds every tensor `cfg` asks for (the recipe's biases, q/k norms and
// post-norms included), checking each one's shape and type. Matrices are
// kept as the file stores them (repacked when `allow_repack`), or converted
// at load: to f32 when `dequantize_to_f32` (reference mode, no repacking),
// else to `precision.to` when set. Errors: a missing tensor (NotFound), a
// wrong shape (InvalidArgument), an unsupported type (Unimplemented). `f`
// must outlive `w`.
Status BindModelWeights(const GgufFile& f, const ModelConfig& cfg, bool allow_repack,
                        bool dequantize_to_f32, const LoadPrecision& precision, ModelWeights* w);

}  // namespace brisk
