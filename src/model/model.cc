#include "model/model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>

#include "tensor/attention.h"
#include "tensor/elementwise.h"

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

Status Model::Bind(const LoadOptions& options) {
  const GgufFile& f = *file_;
  ASSIGN_OR_RETURN(cfg_, ReadModelConfig(f, options.rope_scaling, options.context_tokens));
  RETURN_IF_ERROR(BindModelWeights(f, cfg_, options.allow_repack, options.dequantize_to_f32,
                                   options.precision, &weights_));

  // theta_i = pos * base^(-2i/d), scaled (rope_scaling.h), optionally divided
  // by rope_freqs[i]. Local (sliding-window) layers use their own base,
  // unscaled.
  const std::vector<double> inv_freq =
      RopeInverseFrequencies(cfg_.rope_theta, cfg_.rope_dim, cfg_.rope_scaling);
  const float* rope_freqs = weights_.rope_freqs;
  inv_freq_.resize(cfg_.rope_dim / 2);
  for (int i = 0; i < cfg_.rope_dim / 2; ++i)
    inv_freq_[i] = static_cast<float>(rope_freqs ? inv_freq[i] / rope_freqs[i] : inv_freq[i]);
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
  const DType emb_type = weights_.tok_embd_type;
  const int64_t emb_row = RowBytes(emb_type, d);
  for (int64_t t = 0; t < n; ++t) {
    DequantizeRow(emb_type, weights_.tok_embd->data + batch.tokens[t] * emb_row, &s.x[t * d], d);
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
    const LayerWeights& L = weights_.layers[l];
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
  RmsNorm(s.logit_in.data(), weights_.output_norm, s.logit_in.data(), rows, d, cfg_.rms_eps);
  logits->resize(rows * cfg_.vocab);
  if (rows > 0)
    MatMul(weights_.output, s.logit_in.data(), d, rows, logits->data(), cfg_.vocab, pool, s.mm);
  if (const float cap = cfg_.final_logit_softcap; cap > 0)
    // Softcapping: cap * tanh(x / cap) ~ x for |x| << cap, bounded by +-cap.
    pool.ParallelFor(rows, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b * cfg_.vocab; i < e * cfg_.vocab; ++i)
        (*logits)[i] = cap * std::tanh((*logits)[i] / cap);
    });
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
