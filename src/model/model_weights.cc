#include "model/model_weights.h"

#include <cctype>
#include <string>

#include "tensor/quant_ref.h"

namespace brisk {

namespace {

// Looks up a tensor and checks its shape (GGUF order: dims[0] contiguous).
Expected<const GgufTensorInfo*> GetTensor(const GgufFile& f, const std::string& name,
                                          std::vector<int64_t> dims) {
  const GgufTensorInfo* t = f.FindTensor(name);
  if (!t) return NotFound("tensor '{}' is missing", name);
  if (t->dims != dims) {
    return InvalidArgument("tensor '{}' has shape [{}], expected [{}]", name,
                           fmt::join(t->dims, ", "), fmt::join(dims, ", "));
  }
  return t;
}

Expected<const float*> GetF32(const GgufFile& f, const std::string& name, int64_t n) {
  ASSIGN_OR_RETURN(const GgufTensorInfo* t, GetTensor(f, name, {n}));
  if (t->ggml_type != static_cast<uint32_t>(DType::kF32))
    return Unimplemented("tensor '{}' is {}; only F32 norm weights are supported", name,
                         DTypeName(static_cast<DType>(t->ggml_type)));
  if (reinterpret_cast<uintptr_t>(t->data) % alignof(float) != 0)
    return InvalidArgument("tensor '{}' is misaligned", name);
  return reinterpret_cast<const float*>(t->data);
}

// How matrices are held when not as the file stores them.
struct Conversion {
  std::optional<DType> to;    // reference mode (f32) or a load-time precision
  RowQuantizer quantize_row;  // null: the format's reference quantizer
  std::vector<std::unique_ptr<uint8_t[]>>* store;
};

Expected<MatMulWeight> GetMatrix(const GgufFile& f, const std::string& name, int64_t k,
                                 int64_t rows, bool allow_repack, int64_t* bytes,
                                 const Conversion& conv) {
  ASSIGN_OR_RETURN(const GgufTensorInfo* t, GetTensor(f, name, {k, rows}));
  auto type = static_cast<DType>(t->ggml_type);
  if (!IsMatMulWeightType(type))
    return Unimplemented("tensor '{}' has type {}; supported weight types: {}", name,
                         DTypeName(type), MatMulWeightTypeNames());
  if (conv.to && (*conv.to != type || conv.quantize_row != nullptr)) {
    // Each row dequantized to f32, then written in the target format (the
    // reference quantizer: what `brisk quantize` would write).
    const DType to = *conv.to;
    const int64_t row_bytes = RowBytes(to, k);
    if (row_bytes < 0)
      return InvalidArgument("tensor '{}': rows of {} values do not fit {}'s blocks", name, k,
                             DTypeName(to));
    auto& buf = conv.store->emplace_back(new uint8_t[rows * row_bytes]);
    std::vector<float> row(k);
    for (int64_t r = 0; r < rows; ++r) {
      DequantizeRow(type, t->data + r * RowBytes(type, k), row.data(), k);
      if (conv.quantize_row != nullptr) {
        conv.quantize_row(row.data(), buf.get() + r * row_bytes, k);
      } else {
        QuantizeRow(to, row.data(), buf.get() + r * row_bytes, k);
      }
    }
    *bytes += rows * row_bytes;
    auto w = PrepareMatMulWeight(to, buf.get(), rows, k, allow_repack);
    if (!w.ok()) return w.status().WithContext(fmt::format("tensor '{}'", name));
    return w;
  }
  *bytes += static_cast<int64_t>(t->size_bytes);
  auto w = PrepareMatMulWeight(type, t->data, rows, k, allow_repack);
  if (!w.ok()) return w.status().WithContext(fmt::format("tensor '{}'", name));
  return w;
}

}  // namespace

Expected<LoadPrecision> LoadPrecisionType(std::string_view precision) {
  if (precision == "native") return LoadPrecision{};
  if (precision == "f32") return LoadPrecision{DType::kF32};
  if (precision == "f16") return LoadPrecision{DType::kF16};
  if (precision == "bf16") return LoadPrecision{DType::kBF16};
  if (precision == "q8_0") return LoadPrecision{DType::kQ8_0};
  if (precision == "q4_0") return LoadPrecision{DType::kQ4_0};
  if (precision == "int8") return LoadPrecision{DType::kQ8_0, quant_ref::QuantizeInt8PerChannel};
  if (precision == "int4") return LoadPrecision{DType::kQ4_0, quant_ref::QuantizeInt4Group128};
  if (precision == "fp8") return LoadPrecision{DType::kFP8_E4M3};
  // The other ggml weight formats by their lower-case names (q4_k, iq4_nl, ...).
  for (const FormatTraits& f : AllFormats()) {
    std::string name = f.name;
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == precision && f.kernel_slot >= 0 && f.quantize != nullptr &&
        f.type != DType::kFP8_E4M3)
      return LoadPrecision{f.type};
  }
  return Unimplemented(
      "precision {} is not supported yet; supported: native (the file's own types), f32, f16, "
      "bf16, q8_0, q4_0, int8, int4, fp8, and the other ggml weight formats q4_1, q5_0, q5_1, "
      "q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs (converted at load)",
      precision);
}

Status BindModelWeights(const GgufFile& f, const ModelConfig& cfg, bool allow_repack,
                        bool dequantize_to_f32, const LoadPrecision& precision, ModelWeights* w) {
  const int d = cfg.d_model, q_dim = cfg.n_heads * cfg.head_dim;
  const int kv_dim = cfg.n_kv_heads * cfg.head_dim;
  w->tok_embd = f.FindTensor("token_embd.weight");  // shape checked by ReadModelConfig
  w->tok_embd_type = static_cast<DType>(w->tok_embd->ggml_type);
  if (!IsMatMulWeightType(w->tok_embd_type))
    return Unimplemented("token_embd.weight has unsupported type {}", DTypeName(w->tok_embd_type));

  // Reference mode: exact f32 weights, f32 activations (no 8-bit rounding).
  const bool repack = allow_repack && !dequantize_to_f32;
  const Conversion conv{dequantize_to_f32 ? std::optional<DType>(DType::kF32) : precision.to,
                        dequantize_to_f32 ? nullptr : precision.quantize_row, &w->converted};
  auto matrix = [&](const std::string& name, int64_t k, int64_t rows) {
    return GetMatrix(f, name, k, rows, repack, &w->bytes, conv);
  };
  ASSIGN_OR_RETURN(w->output_norm, GetF32(f, "output_norm.weight", d));
  ASSIGN_OR_RETURN(w->output,
                   matrix(cfg.tied_output ? "token_embd.weight" : "output.weight", d, cfg.vocab));
  if (f.FindTensor("rope_freqs.weight")) {
    ASSIGN_OR_RETURN(w->rope_freqs, GetF32(f, "rope_freqs.weight", cfg.rope_dim / 2));
  }

  w->layers.resize(cfg.n_layers);
  for (int i = 0; i < cfg.n_layers; ++i) {
    LayerWeights& L = w->layers[i];
    const std::string b = fmt::format("blk.{}.", i);
    ASSIGN_OR_RETURN(L.attn_norm, GetF32(f, b + "attn_norm.weight", d));
    ASSIGN_OR_RETURN(L.ffn_norm, GetF32(f, b + "ffn_norm.weight", d));
    if (cfg.qkv_bias) {
      ASSIGN_OR_RETURN(L.bq, GetF32(f, b + "attn_q.bias", q_dim));
      ASSIGN_OR_RETURN(L.bk, GetF32(f, b + "attn_k.bias", kv_dim));
      ASSIGN_OR_RETURN(L.bv, GetF32(f, b + "attn_v.bias", kv_dim));
    }
    if (cfg.qk_norm) {
      ASSIGN_OR_RETURN(L.q_norm, GetF32(f, b + "attn_q_norm.weight", cfg.head_dim));
      ASSIGN_OR_RETURN(L.k_norm, GetF32(f, b + "attn_k_norm.weight", cfg.head_dim));
    }
    if (cfg.post_norms) {
      ASSIGN_OR_RETURN(L.post_attn_norm, GetF32(f, b + "post_attention_norm.weight", d));
      ASSIGN_OR_RETURN(L.post_ffn_norm, GetF32(f, b + "post_ffw_norm.weight", d));
    }
    ASSIGN_OR_RETURN(L.wq, matrix(b + "attn_q.weight", d, q_dim));
    ASSIGN_OR_RETURN(L.wk, matrix(b + "attn_k.weight", d, kv_dim));
    ASSIGN_OR_RETURN(L.wv, matrix(b + "attn_v.weight", d, kv_dim));
    ASSIGN_OR_RETURN(L.wo, matrix(b + "attn_output.weight", q_dim, d));
    ASSIGN_OR_RETURN(L.w_gate, matrix(b + "ffn_gate.weight", d, cfg.d_ff));
    ASSIGN_OR_RETURN(L.w_up, matrix(b + "ffn_up.weight", d, cfg.d_ff));
    ASSIGN_OR_RETURN(L.w_down, matrix(b + "ffn_down.weight", cfg.d_ff, d));
  }
  return Status::Ok();
}

}  // namespace brisk
