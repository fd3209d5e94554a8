#include "model/model.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>

#include "model/arch_recipe.h"
#include "tensor/attention.h"
#include "tensor/elementwise.h"
#include "tensor/quant_ref.h"

namespace brisk {

// Activations for one forward pass, sized for the largest batch seen so far
// and reused: no allocation per step once warm.
struct Model::Scratch {
  int64_t capacity = 0;  // tokens
  std::vector<float> x, xn, q, k, v, attn, tmp, gate, up, rope_cos, rope_sin, logit_in;
  std::vector<float> rope_cos_local, rope_sin_local;  // sliding-window layers' RoPE
  std::vector<int32_t> pos;
  std::vector<float> attn_scratch;
  struct AttnItem {  // (sequence, KV head, chunk of tokens)
    int32_t seq, kv_head, t0, n;
  };
  std::vector<AttnItem> attn_items;
  std::vector<int32_t> tok_seq;            // batch sequence of each token
  std::vector<std::vector<float>> scores;  // per thread, context-sized
  MatMulScratch mm;

  void Reserve(const ModelConfig& c, int64_t n, int n_threads) {
    if (n > capacity) {
      capacity = n;
      x.resize(n * c.d_model);
      xn.resize(n * c.d_model);
      q.resize(n * c.n_heads * c.head_dim);
      k.resize(n * c.n_kv_heads * c.head_dim);
      v.resize(n * c.n_kv_heads * c.head_dim);
      attn.resize(n * c.n_heads * c.head_dim);
      tmp.resize(n * c.d_model);
      gate.resize(n * c.d_ff);
      up.resize(n * c.d_ff);
      rope_cos.resize(n * (c.rope_dim / 2));
      rope_sin.resize(n * (c.rope_dim / 2));
      if (c.sliding_window > 0) {
        rope_cos_local.resize(n * (c.rope_dim / 2));
        rope_sin_local.resize(n * (c.rope_dim / 2));
      }
      logit_in.resize(n * c.d_model);
      pos.resize(n);
      tok_seq.resize(n);
    }
    if (static_cast<int>(scores.size()) < n_threads) scores.resize(n_threads);
  }
};

Model::~Model() = default;

Expected<std::unique_ptr<Model>> Model::Load(const std::string& path, const LoadOptions& options) {
  ASSIGN_OR_RETURN(auto file, GgufFile::Open(path));
  return FromGguf(std::shared_ptr<const GgufFile>(std::move(file)), options);
}

Expected<std::unique_ptr<Model>> Model::FromGguf(std::shared_ptr<const GgufFile> file,
                                                 const LoadOptions& options) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  Status s = m->Bind(options);
  if (!s.ok()) return s.WithContext(fmt::format("loading model '{}'", m->file_->path()));
  return m;
}

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

// The file's `{arch}.rope.scaling.*` keys (llama.cpp's names), or the
// profile's scaling in their place; sets cfg->rope_scaling and, when the
// scaling extends the context, cfg->context_length.
Status ReadRopeScaling(const GgufFile& f, const std::string& p, const LoadOptions& options,
                       ModelConfig* cfg) {
  RopeScaling s;
  ASSIGN_OR_RETURN(std::string type, f.GetStringOr(p + "rope.scaling.type", "none"));
  ASSIGN_OR_RETURN(s.type, ParseRopeScalingType(type));
  ASSIGN_OR_RETURN(s.factor, f.GetFloatOr(p + "rope.scaling.factor", 1.0));
  ASSIGN_OR_RETURN(int64_t original, f.GetIntOr(p + "rope.scaling.original_context_length", 0));
  ASSIGN_OR_RETURN(s.attn_factor, f.GetFloatOr(p + "rope.scaling.attn_factor", 1.0));
  ASSIGN_OR_RETURN(s.beta_fast, f.GetFloatOr(p + "rope.scaling.yarn_beta_fast", 32.0));
  ASSIGN_OR_RETURN(s.beta_slow, f.GetFloatOr(p + "rope.scaling.yarn_beta_slow", 1.0));
  ASSIGN_OR_RETURN(double log_mul, f.GetFloatOr(p + "rope.scaling.yarn_log_multiplier", 0.0));
  if (s.type == RopeScaling::Type::kYarn && log_mul != 0)
    return Unimplemented("{}rope.scaling.yarn_log_multiplier (DeepSeek's YaRN) is not supported",
                         p);
  if (s.type == RopeScaling::Type::kNone) s.factor = 1;
  // The trained context: the file's original_context_length when it has one.
  // A file's context_length already counts its own scaling, unless an
  // original length times the factor says more.
  s.original_context = original > 0 ? original : cfg->context_length;
  int64_t context = cfg->context_length;
  if (s.type != RopeScaling::Type::kNone && original > 0)
    context = std::max(context, static_cast<int64_t>(original * s.factor));
  if (options.rope_scaling) {
    RopeScaling o = *options.rope_scaling;
    if (o.original_context == 0) o.original_context = s.original_context;
    if (o.type == RopeScaling::Type::kNone) {
      o.factor = 1;
    } else if (o.factor == 0) {
      o.factor = std::max(1.0, static_cast<double>(options.context_tokens) /
                                   static_cast<double>(o.original_context));
    }
    s = o;
    context = static_cast<int64_t>(static_cast<double>(s.original_context) * s.factor);
  }
  if (Status st = ValidateRopeScaling(s); !st.ok())
    return st.WithContext(fmt::format("{}rope.scaling", options.rope_scaling ? "model." : p));
  if (context > (int64_t{1} << 24))
    return InvalidArgument("rope scaling gives a context of {} tokens, over the 16M limit",
                           context);
  cfg->rope_scaling = s;
  cfg->context_length = static_cast<int>(context);
  return Status::Ok();
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

Status Model::Bind(const LoadOptions& options) {
  const GgufFile& f = *file_;
  ASSIGN_OR_RETURN(cfg_.arch, f.GetString("general.architecture"));
  const ArchRecipe* recipe = FindArchRecipe(cfg_.arch);
  if (recipe == nullptr)
    return Unimplemented("architecture '{}' is not supported (supported: {})", cfg_.arch,
                         SupportedArchitectures());
  const std::string p = cfg_.arch + ".";
  auto get_int = [&](const std::string& key, int64_t lo, int64_t hi) -> Expected<int> {
    ASSIGN_OR_RETURN(int64_t v, f.GetInt(p + key));
    if (v < lo || v > hi)
      return InvalidArgument("{}{} = {} is out of range [{}, {}]", p, key, v, lo, hi);
    return static_cast<int>(v);
  };
  ASSIGN_OR_RETURN(cfg_.n_layers, get_int("block_count", 1, 1024));
  ASSIGN_OR_RETURN(cfg_.d_model, get_int("embedding_length", 1, 1 << 16));
  ASSIGN_OR_RETURN(cfg_.n_heads, get_int("attention.head_count", 1, 1024));
  ASSIGN_OR_RETURN(cfg_.d_ff, get_int("feed_forward_length", 1, 1 << 18));
  ASSIGN_OR_RETURN(cfg_.context_length, get_int("context_length", 1, 1 << 24));
  {
    ASSIGN_OR_RETURN(int64_t kvh, f.GetIntOr(p + "attention.head_count_kv", cfg_.n_heads));
    if (kvh < 1 || cfg_.n_heads % kvh != 0)
      return InvalidArgument("{}attention.head_count_kv = {} does not divide head_count {}", p, kvh,
                             cfg_.n_heads);
    cfg_.n_kv_heads = static_cast<int>(kvh);
    ASSIGN_OR_RETURN(int64_t hd,
                     f.GetIntOr(p + "attention.key_length", cfg_.d_model / cfg_.n_heads));
    if (hd < 2 || hd > 256 || hd % 2 != 0)
      return InvalidArgument("head dimension {} is not supported", hd);
    cfg_.head_dim = static_cast<int>(hd);
    ASSIGN_OR_RETURN(int64_t rd, f.GetIntOr(p + "rope.dimension_count", cfg_.head_dim));
    if (rd < 2 || rd > cfg_.head_dim || rd % 2 != 0)
      return InvalidArgument("{}rope.dimension_count = {} is invalid for head dim {}", p, rd,
                             cfg_.head_dim);
    cfg_.rope_dim = static_cast<int>(rd);
    ASSIGN_OR_RETURN(double theta, f.GetFloatOr(p + "rope.freq_base", 10000.0));
    if (!(theta > 0)) return InvalidArgument("{}rope.freq_base must be positive", p);
    cfg_.rope_theta = static_cast<float>(theta);
    ASSIGN_OR_RETURN(double eps, f.GetFloatOr(p + "attention.layer_norm_rms_epsilon", 1e-5));
    if (!(eps > 0 && eps < 1)) return InvalidArgument("rms epsilon {} is invalid", eps);
    cfg_.rms_eps = static_cast<float>(eps);
    RETURN_IF_ERROR(ReadRopeScaling(f, p, options, &cfg_));
  }
  RETURN_IF_ERROR(ApplyArchRecipe(*recipe, f, &cfg_));
  const int q_dim = cfg_.n_heads * cfg_.head_dim;
  const int kv_dim = cfg_.n_kv_heads * cfg_.head_dim;

  const GgufTensorInfo* emb = f.FindTensor("token_embd.weight");
  if (!emb) return NotFound("tensor 'token_embd.weight' is missing");
  if (emb->dims.size() != 2 || emb->dims[0] != cfg_.d_model)
    return InvalidArgument("token_embd.weight has shape [{}], expected [{}, vocab]",
                           fmt::join(emb->dims, ", "), cfg_.d_model);
  cfg_.vocab = static_cast<int>(emb->dims[1]);
  tok_embd_ = emb;
  tok_embd_type_ = static_cast<DType>(emb->ggml_type);
  if (!IsMatMulWeightType(tok_embd_type_))
    return Unimplemented("token_embd.weight has unsupported type {}", DTypeName(tok_embd_type_));

  // Reference mode: exact f32 weights, f32 activations (no 8-bit rounding).
  const bool repack = options.allow_repack && !options.dequantize_to_f32;
  const Conversion f32{
      options.dequantize_to_f32 ? std::optional<DType>(DType::kF32) : options.precision.to,
      options.dequantize_to_f32 ? nullptr : options.precision.quantize_row, &converted_weights_};
  ASSIGN_OR_RETURN(output_norm_, GetF32(f, "output_norm.weight", cfg_.d_model));
  if (f.FindTensor("output.weight")) {
    ASSIGN_OR_RETURN(output_, GetMatrix(f, "output.weight", cfg_.d_model, cfg_.vocab, repack,
                                        &weight_bytes_, f32));
  } else {
    cfg_.tied_output = true;
    ASSIGN_OR_RETURN(output_, GetMatrix(f, "token_embd.weight", cfg_.d_model, cfg_.vocab, repack,
                                        &weight_bytes_, f32));
  }
  if (const GgufTensorInfo* rf = f.FindTensor("rope_freqs.weight")) {
    ASSIGN_OR_RETURN(rope_freqs_, GetF32(f, "rope_freqs.weight", cfg_.rope_dim / 2));
    (void)rf;
  }

  layers_.resize(cfg_.n_layers);
  for (int i = 0; i < cfg_.n_layers; ++i) {
    Layer& L = layers_[i];
    const std::string b = fmt::format("blk.{}.", i);
    ASSIGN_OR_RETURN(L.attn_norm, GetF32(f, b + "attn_norm.weight", cfg_.d_model));
    ASSIGN_OR_RETURN(L.ffn_norm, GetF32(f, b + "ffn_norm.weight", cfg_.d_model));
    if (cfg_.qkv_bias) {
      ASSIGN_OR_RETURN(L.bq, GetF32(f, b + "attn_q.bias", q_dim));
      ASSIGN_OR_RETURN(L.bk, GetF32(f, b + "attn_k.bias", kv_dim));
      ASSIGN_OR_RETURN(L.bv, GetF32(f, b + "attn_v.bias", kv_dim));
    }
    if (cfg_.qk_norm) {
      ASSIGN_OR_RETURN(L.q_norm, GetF32(f, b + "attn_q_norm.weight", cfg_.head_dim));
      ASSIGN_OR_RETURN(L.k_norm, GetF32(f, b + "attn_k_norm.weight", cfg_.head_dim));
    }
    if (cfg_.post_norms) {
      ASSIGN_OR_RETURN(L.post_attn_norm, GetF32(f, b + "post_attention_norm.weight", cfg_.d_model));
      ASSIGN_OR_RETURN(L.post_ffn_norm, GetF32(f, b + "post_ffw_norm.weight", cfg_.d_model));
    }
    ASSIGN_OR_RETURN(
        L.wq, GetMatrix(f, b + "attn_q.weight", cfg_.d_model, q_dim, repack, &weight_bytes_, f32));
    ASSIGN_OR_RETURN(
        L.wk, GetMatrix(f, b + "attn_k.weight", cfg_.d_model, kv_dim, repack, &weight_bytes_, f32));
    ASSIGN_OR_RETURN(
        L.wv, GetMatrix(f, b + "attn_v.weight", cfg_.d_model, kv_dim, repack, &weight_bytes_, f32));
    ASSIGN_OR_RETURN(L.wo, GetMatrix(f, b + "attn_output.weight", q_dim, cfg_.d_model, repack,
                                     &weight_bytes_, f32));
    ASSIGN_OR_RETURN(L.w_gate, GetMatrix(f, b + "ffn_gate.weight", cfg_.d_model, cfg_.d_ff, repack,
                                         &weight_bytes_, f32));
    ASSIGN_OR_RETURN(L.w_up, GetMatrix(f, b + "ffn_up.weight", cfg_.d_model, cfg_.d_ff, repack,
                                       &weight_bytes_, f32));
    ASSIGN_OR_RETURN(L.w_down, GetMatrix(f, b + "ffn_down.weight", cfg_.d_ff, cfg_.d_model, repack,
                                         &weight_bytes_, f32));
  }

  // theta_i = pos * base^(-2i/d), scaled (rope_scaling.h), optionally divided
  // by rope_freqs[i]. Local (sliding-window) layers use their own base,
  // unscaled.
  const std::vector<double> inv_freq =
      RopeInverseFrequencies(cfg_.rope_theta, cfg_.rope_dim, cfg_.rope_scaling);
  inv_freq_.resize(cfg_.rope_dim / 2);
  for (int i = 0; i < cfg_.rope_dim / 2; ++i)
    inv_freq_[i] = static_cast<float>(rope_freqs_ ? inv_freq[i] / rope_freqs_[i] : inv_freq[i]);
  rope_magnitude_ = static_cast<float>(RopeMagnitude(cfg_.rope_scaling));
  if (cfg_.sliding_window > 0) {
    inv_freq_local_.resize(cfg_.rope_dim / 2);
    for (int i = 0; i < cfg_.rope_dim / 2; ++i)
      inv_freq_local_[i] = static_cast<float>(
          std::pow(static_cast<double>(cfg_.rope_theta_local), -2.0 * i / cfg_.rope_dim));
  }
  scratch_ = std::make_unique<Scratch>();
  return Status::Ok();
}

KvCacheShape Model::kv_shape(int block_size, KvType type, bool window_paging) const {
  KvCacheShape shape;
  shape.n_layers = cfg_.n_layers;
  shape.n_kv_heads = cfg_.n_kv_heads;
  shape.head_dim = cfg_.head_dim;
  shape.block_size = block_size;
  shape.type = type;
  int n_global = 0;
  for (int l = 0; l < cfg_.n_layers; ++l) n_global += !cfg_.IsLocal(l);
  if (!window_paging || n_global == 0 || n_global == cfg_.n_layers) return shape;
  shape.page_layers = n_global;
  shape.local_groups = (cfg_.n_layers - n_global + n_global - 1) / n_global;
  int global = 0, local = 0;
  for (int l = 0; l < cfg_.n_layers; ++l) {
    const bool is_local = cfg_.IsLocal(l);
    const int i = is_local ? local++ : global++;
    shape.layer_group.push_back(is_local ? 1 + i / n_global : 0);
    shape.layer_slot.push_back(i % n_global);
  }
  return shape;
}

// The block table layer `layer` of sequence `s` reads and writes.
static const int32_t* LayerTable(const BatchSequence& s, const KvCacheShape& shape, int layer) {
  const int g = shape.group(layer);
  return g == 0 ? s.block_table.data() : s.local_tables.data() + (g - 1) * s.block_table.size();
}

Status Model::ValidateBatch(const Batch& batch, const KvCache& kv) const {
  if (kv.shape().n_layers != cfg_.n_layers ||
      kv.shape().kv_dim() != cfg_.n_kv_heads * cfg_.head_dim)
    return InvalidArgument("KV cache shape does not match the model");
  int64_t covered = 0;
  for (const auto& s : batch.seqs) {
    if (s.n_tokens < 1 || s.token_begin != covered)
      return InvalidArgument("batch sequences must be contiguous, non-empty slices");
    covered += s.n_tokens;
    if (s.pos_begin < 0 || int64_t{s.pos_begin} + s.n_tokens > cfg_.context_length)
      return OutOfRange("positions [{}, {}) exceed the model's context length {}", s.pos_begin,
                        s.pos_begin + s.n_tokens, cfg_.context_length);
    const int64_t need = kv.shape().BlocksFor(int64_t{s.pos_begin} + s.n_tokens);
    if (static_cast<int64_t>(s.block_table.size()) < need)
      return InvalidArgument("block table has {} blocks, {} needed", s.block_table.size(), need);
    for (int64_t i = 0; i < need; ++i)
      if (s.block_table[i] < 0 || s.block_table[i] >= kv.num_blocks())
        return InvalidArgument("block id {} out of range", s.block_table[i]);
    const int groups = kv.shape().local_groups;
    if (static_cast<int64_t>(s.local_tables.size()) !=
        groups * static_cast<int64_t>(s.block_table.size()))
      return InvalidArgument("{} local block tables expected", groups);
    // Local pages: the blocks the first position's window reaches, onwards.
    const int64_t seen = std::max<int64_t>(0, int64_t{s.pos_begin} - cfg_.sliding_window + 1);
    for (int g = 0; g < groups; ++g)
      for (int64_t i = seen / kv.shape().block_size; i < need; ++i) {
        const int32_t b = s.local_tables[g * s.block_table.size() + i];
        if (b < 0 || b >= kv.num_blocks())
          return InvalidArgument("local page id {} out of range", b);
      }
  }
  if (covered != static_cast<int64_t>(batch.tokens.size()))
    return InvalidArgument("batch tokens not covered by sequences");
  for (int32_t t : batch.tokens)
    if (t < 0 || t >= cfg_.vocab) return InvalidArgument("token id {} out of range", t);
  return Status::Ok();
}

Status Model::Forward(const Batch& batch, KvCache& kv, ThreadPool& pool,
                      std::vector<float>* logits) {
  RETURN_IF_ERROR(ValidateBatch(batch, kv));
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
  if (n == 0) {
    logits->clear();
    return Status::Ok();
  }
  Scratch& s = *scratch_;
  s.Reserve(cfg_, n, pool.size());
  const int d = cfg_.d_model;
  const int q_dim = cfg_.n_heads * cfg_.head_dim;
  const int kv_dim = cfg_.n_kv_heads * cfg_.head_dim;
  const int half = cfg_.rope_dim / 2;

  for (size_t si = 0; si < batch.seqs.size(); ++si) {
    const BatchSequence& seq = batch.seqs[si];
    for (int32_t i = 0; i < seq.n_tokens; ++i) {
      s.pos[seq.token_begin + i] = seq.pos_begin + i;
      s.tok_seq[seq.token_begin + i] = static_cast<int32_t>(si);
    }
  }
  // Per-token work (norms, RoPE, K/V stores, SwiGLU) split over the pool by
  // token ranges; each token's arithmetic is the same however it is split.
  auto per_token = [&](auto&& fn) { pool.ParallelFor(n, 1, fn); };

  // Embeddings and the RoPE table (shared by every layer and head).
  const int64_t emb_row = RowBytes(tok_embd_type_, d);
  for (int64_t t = 0; t < n; ++t) {
    DequantizeRow(tok_embd_type_, tok_embd_->data + batch.tokens[t] * emb_row, &s.x[t * d], d);
    if (cfg_.embed_scale != 1.f) ScaleInPlace(&s.x[t * d], cfg_.embed_scale, d);
    for (int i = 0; i < half; ++i) {
      float theta = static_cast<float>(s.pos[t]) * inv_freq_[i];
      s.rope_cos[t * half + i] = std::cos(theta) * rope_magnitude_;
      s.rope_sin[t * half + i] = std::sin(theta) * rope_magnitude_;
    }
    for (int i = 0; i < static_cast<int>(inv_freq_local_.size()); ++i) {
      float theta = static_cast<float>(s.pos[t]) * inv_freq_local_[i];
      s.rope_cos_local[t * half + i] = std::cos(theta);
      s.rope_sin_local[t * half + i] = std::sin(theta);
    }
  }
  const auto rope = cfg_.rope == ModelConfig::Rope::kNeox ? RopeNeox : RopeNorm;

  for (int l = 0; l < cfg_.n_layers; ++l) {
    const Layer& L = layers_[l];
    per_token([&](int64_t b, int64_t e) {
      RmsNorm(&s.x[b * d], L.attn_norm, &s.xn[b * d], e - b, d, cfg_.rms_eps);
    });
    const MatMulOut qkv[] = {
        {&L.wq, s.q.data(), q_dim}, {&L.wk, s.k.data(), kv_dim}, {&L.wv, s.v.data(), kv_dim}};
    MatMulFused(qkv, s.xn.data(), d, n, pool, s.mm);
    if (cfg_.qkv_bias)
      per_token([&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          AddInPlace(&s.q[t * q_dim], L.bq, q_dim);
          AddInPlace(&s.k[t * kv_dim], L.bk, kv_dim);
          AddInPlace(&s.v[t * kv_dim], L.bv, kv_dim);
        }
      });
    const bool local = cfg_.IsLocal(l);
    const float* cos = local ? s.rope_cos_local.data() : s.rope_cos.data();
    const float* sin = local ? s.rope_sin_local.data() : s.rope_sin.data();
    per_token([&](int64_t b, int64_t e) {
      if (cfg_.qk_norm) {
        RmsNorm(&s.q[b * q_dim], L.q_norm, &s.q[b * q_dim], (e - b) * cfg_.n_heads, cfg_.head_dim,
                cfg_.rms_eps);
        RmsNorm(&s.k[b * kv_dim], L.k_norm, &s.k[b * kv_dim], (e - b) * cfg_.n_kv_heads,
                cfg_.head_dim, cfg_.rms_eps);
      }
      rope(&s.q[b * q_dim], e - b, cfg_.n_heads, cfg_.head_dim, cfg_.rope_dim, &cos[b * half],
           &sin[b * half]);
      rope(&s.k[b * kv_dim], e - b, cfg_.n_kv_heads, cfg_.head_dim, cfg_.rope_dim, &cos[b * half],
           &sin[b * half]);
      for (int64_t t = b; t < e; ++t)
        kv.StoreToken(l, LayerTable(batch.seqs[s.tok_seq[t]], kv.shape(), l), s.pos[t],
                      &s.k[t * kv_dim], &s.v[t * kv_dim]);
    });
    const auto attn_start = std::chrono::steady_clock::now();
    Attention(l, batch, s.pos, kv, pool);
    attention_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - attn_start)
                         .count();
    MatMul(L.wo, s.attn.data(), q_dim, n, s.tmp.data(), d, pool, s.mm);
    if (cfg_.post_norms)
      per_token([&](int64_t b, int64_t e) {
        RmsNorm(&s.tmp[b * d], L.post_attn_norm, &s.tmp[b * d], e - b, d, cfg_.rms_eps);
      });
    AddInPlace(s.x.data(), s.tmp.data(), n * d);
    per_token([&](int64_t b, int64_t e) {
      RmsNorm(&s.x[b * d], L.ffn_norm, &s.xn[b * d], e - b, d, cfg_.rms_eps);
    });
    const MatMulOut gate_up[] = {{&L.w_gate, s.gate.data(), cfg_.d_ff},
                                 {&L.w_up, s.up.data(), cfg_.d_ff}};
    MatMulFused(gate_up, s.xn.data(), d, n, pool, s.mm);
    per_token([&](int64_t b, int64_t e) {
      if (cfg_.activation == ModelConfig::Activation::kGeluTanh)
        GeluTanhMulF32(&s.gate[b * cfg_.d_ff], &s.up[b * cfg_.d_ff], (e - b) * cfg_.d_ff);
      else
        SiluMulF32(&s.gate[b * cfg_.d_ff], &s.up[b * cfg_.d_ff], (e - b) * cfg_.d_ff);
    });
    MatMul(L.w_down, s.gate.data(), cfg_.d_ff, n, s.tmp.data(), d, pool, s.mm);
    if (cfg_.post_norms)
      per_token([&](int64_t b, int64_t e) {
        RmsNorm(&s.tmp[b * d], L.post_ffn_norm, &s.tmp[b * d], e - b, d, cfg_.rms_eps);
      });
    AddInPlace(s.x.data(), s.tmp.data(), n * d);
  }

  // Final norm and the output projection, only on rows whose logits are wanted.
  int64_t rows = 0;
  for (const auto& seq : batch.seqs) {
    using L = BatchSequence::Logits;
    if (seq.logits == L::kNone) continue;
    int32_t first = seq.logits == L::kAll ? 0 : seq.n_tokens - 1;
    for (int32_t i = first; i < seq.n_tokens; ++i, ++rows)
      std::memcpy(&s.logit_in[rows * d], &s.x[(seq.token_begin + i) * int64_t{d}],
                  sizeof(float) * d);
  }
  RmsNorm(s.logit_in.data(), output_norm_, s.logit_in.data(), rows, d, cfg_.rms_eps);
  logits->resize(rows * cfg_.vocab);
  if (rows > 0) MatMul(output_, s.logit_in.data(), d, rows, logits->data(), cfg_.vocab, pool, s.mm);
  return Status::Ok();
}

void Model::Attention(int layer, const Batch& batch, const std::vector<int32_t>& pos, KvCache& kv,
                      ThreadPool& pool) {
  Scratch& s = *scratch_;
  const int hd = cfg_.head_dim;
  const int group = cfg_.n_heads / cfg_.n_kv_heads;
  const int q_dim = cfg_.n_heads * hd;
  const int bs = kv.shape().block_size;
  // Work items: (sequence, KV head, chunk of up to kChunk tokens), taken
  // dynamically (later chunks of a long prompt cost more).
  constexpr int kChunk = 32;
  auto& items = s.attn_items;
  items.clear();
  for (size_t si = 0; si < batch.seqs.size(); ++si) {
    const BatchSequence& seq = batch.seqs[si];
    for (int32_t t0 = 0; t0 < seq.n_tokens; t0 += kChunk)
      for (int g = 0; g < cfg_.n_kv_heads; ++g)
        items.push_back({static_cast<int32_t>(si), g, t0, std::min(kChunk, seq.n_tokens - t0)});
  }
  int64_t max_ctx = 0;
  for (const auto& seq : batch.seqs)
    max_ctx = std::max<int64_t>(max_ctx, int64_t{seq.pos_begin} + seq.n_tokens);
  const int64_t scratch_floats = AttentionScratchFloats(max_ctx, hd, bs);
  if (static_cast<int64_t>(s.attn_scratch.size()) < scratch_floats * pool.size())
    s.attn_scratch.resize(scratch_floats * pool.size());
  std::atomic<size_t> next{0};
  auto body = [&](int th, int) {
    float* scratch = s.attn_scratch.data() + th * scratch_floats;
    for (size_t k; (k = next.fetch_add(1, std::memory_order_relaxed)) < items.size();) {
      const Scratch::AttnItem& it = items[k];
      const BatchSequence& seq = batch.seqs[it.seq];
      const int64_t t = seq.token_begin + it.t0;
      AttentionChunk a;
      a.q = &s.q[t * q_dim + int64_t{it.kv_head} * group * hd];
      a.out = &s.attn[t * q_dim + int64_t{it.kv_head} * group * hd];
      a.q_stride = q_dim;
      a.n_tokens = it.n;
      a.group = group;
      a.head_dim = hd;
      a.first_pos = pos[t];
      a.window = cfg_.IsLocal(layer) ? cfg_.sliding_window : 0;
      a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
      a.kv = kv.Head(layer, it.kv_head);
      a.block_table = LayerTable(seq, kv.shape(), layer);
      AttentionCausal(a, scratch);
    }
  };
  pool.Run(body);
}

}  // namespace brisk
