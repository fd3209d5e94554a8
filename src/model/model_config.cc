#include "model/model_config.h"

#include <algorithm>

#include "model/arch_recipe.h"

namespace brisk {

namespace {

// The file's `{arch}.rope.scaling.*` keys (llama.cpp's names), or the
// profile's scaling in their place; sets cfg->rope_scaling and, when the
// scaling extends the context, cfg->context_length.
Status ReadRopeScaling(const GgufFile& f, const std::string& p,
                       const std::optional<RopeScaling>& profile, int64_t context_tokens,
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
  if (profile) {
    RopeScaling o = *profile;
    if (o.original_context == 0) o.original_context = s.original_context;
    if (o.type == RopeScaling::Type::kNone) {
      o.factor = 1;
    } else if (o.factor == 0) {
      o.factor = std::max(
          1.0, static_cast<double>(context_tokens) / static_cast<double>(o.original_context));
    }
    s = o;
    context = static_cast<int64_t>(static_cast<double>(s.original_context) * s.factor);
  }
  if (Status st = ValidateRopeScaling(s); !st.ok())
    return st.WithContext(fmt::format("{}rope.scaling", profile ? "model." : p));
  if (context > (int64_t{1} << 24))
    return InvalidArgument("rope scaling gives a context of {} tokens, over the 16M limit",
                           context);
  cfg->rope_scaling = s;
  cfg->context_length = static_cast<int>(context);
  return Status::Ok();
}

}  // namespace

Expected<ModelConfig> ReadModelConfig(const GgufFile& f,
                                      const std::optional<RopeScaling>& rope_scaling,
                                      int64_t context_tokens) {
  ModelConfig cfg;
  ASSIGN_OR_RETURN(cfg.arch, f.GetString("general.architecture"));
  const ArchRecipe* recipe = FindArchRecipe(cfg.arch);
  if (recipe == nullptr)
    return Unimplemented("architecture '{}' is not supported (supported: {})", cfg.arch,
                         SupportedArchitectures());
  const std::string p = cfg.arch + ".";
  auto get_int = [&](const std::string& key, int64_t lo, int64_t hi) -> Expected<int> {
    ASSIGN_OR_RETURN(int64_t v, f.GetInt(p + key));
    if (v < lo || v > hi)
      return InvalidArgument("{}{} = {} is out of range [{}, {}]", p, key, v, lo, hi);
    return static_cast<int>(v);
  };
  ASSIGN_OR_RETURN(cfg.n_layers, get_int("block_count", 1, 1024));
  ASSIGN_OR_RETURN(cfg.d_model, get_int("embedding_length", 1, 1 << 16));
  ASSIGN_OR_RETURN(cfg.n_heads, get_int("attention.head_count", 1, 1024));
  ASSIGN_OR_RETURN(cfg.d_ff, get_int("feed_forward_length", 1, 1 << 18));
  ASSIGN_OR_RETURN(cfg.context_length, get_int("context_length", 1, 1 << 24));
  ASSIGN_OR_RETURN(int64_t kvh, f.GetIntOr(p + "attention.head_count_kv", cfg.n_heads));
  if (kvh < 1 || cfg.n_heads % kvh != 0)
    return InvalidArgument("{}attention.head_count_kv = {} does not divide head_count {}", p, kvh,
                           cfg.n_heads);
  cfg.n_kv_heads = static_cast<int>(kvh);
  ASSIGN_OR_RETURN(int64_t hd, f.GetIntOr(p + "attention.key_length", cfg.d_model / cfg.n_heads));
  if (hd < 2 || hd > 256 || hd % 2 != 0)
    return InvalidArgument("head dimension {} is not supported", hd);
  cfg.head_dim = static_cast<int>(hd);
  ASSIGN_OR_RETURN(int64_t rd, f.GetIntOr(p + "rope.dimension_count", cfg.head_dim));
  if (rd < 2 || rd > cfg.head_dim || rd % 2 != 0)
    return InvalidArgument("{}rope.dimension_count = {} is invalid for head dim {}", p, rd,
                           cfg.head_dim);
  cfg.rope_dim = static_cast<int>(rd);
  ASSIGN_OR_RETURN(double theta, f.GetFloatOr(p + "rope.freq_base", 10000.0));
  if (!(theta > 0)) return InvalidArgument("{}rope.freq_base must be positive", p);
  cfg.rope_theta = static_cast<float>(theta);
  ASSIGN_OR_RETURN(double eps, f.GetFloatOr(p + "attention.layer_norm_rms_epsilon", 1e-5));
  if (!(eps > 0 && eps < 1)) return InvalidArgument("rms epsilon {} is invalid", eps);
  cfg.rms_eps = static_cast<float>(eps);
  RETURN_IF_ERROR(ReadRopeScaling(f, p, rope_scaling, context_tokens, &cfg));
  RETURN_IF_ERROR(ApplyArchRecipe(*recipe, f, &cfg));

  const GgufTensorInfo* emb = f.FindTensor("token_embd.weight");
  if (!emb) return NotFound("tensor 'token_embd.weight' is missing");
  if (emb->dims.size() != 2 || emb->dims[0] != cfg.d_model)
    return InvalidArgument("token_embd.weight has shape [{}], expected [{}, vocab]",
                           fmt::join(emb->dims, ", "), cfg.d_model);
  cfg.vocab = static_cast<int>(emb->dims[1]);
  cfg.tied_output = f.FindTensor("output.weight") == nullptr;
  return cfg;
}

}  // namespace brisk
