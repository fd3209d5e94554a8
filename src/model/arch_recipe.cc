#include "model/arch_recipe.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace brisk {

namespace {

using Act = ModelConfig::Activation;
using Rope = ModelConfig::Rope;

// The RoPE layouts are llama.cpp's rope types for these architectures
// (llama_model_rope_type): NORM (pairs) for llama/mistral, NEOX for the rest.
constexpr ArchRecipe kRecipes[] = {
    {.name = "llama"},
    {.name = "mistral"},
    // Gemma 3: five sliding-window layers, then a global one; GELU-gated MLP.
    {.name = "gemma3",
     .activation = Act::kGeluTanh,
     .rope = Rope::kNeox,
     .qk_norm = true,
     .post_norms = true,
     .embed_scale_sqrt_d = true,
     .global_every = 6,
     .rope_theta_local = 10000.f},
    // Qwen2 / Qwen2.5: llama with biases on the q, k and v projections.
    {.name = "qwen2", .rope = Rope::kNeox, .qkv_bias = true},
    // Qwen3: no biases; RMSNorm of each q and k head (head_dim from key_length).
    {.name = "qwen3", .rope = Rope::kNeox, .qk_norm = true},
};

// One flag per layer, true = sliding-window: from the file's `key` (an
// integer period, or one bool or integer per layer), else from the recipe's
// period.
Expected<std::vector<bool>> ReadLocalLayers(const GgufFile& f, const std::string& key, int period,
                                            int n_layers) {
  std::vector<bool> local(n_layers);
  const GgufValue* v = f.Find(key);
  if (v != nullptr && v->type == GgufType::kArray) {
    if (v->elem_type != GgufType::kBool) RETURN_IF_ERROR(f.GetIntArray(key).status());
    if (static_cast<int64_t>(v->arr.size()) != n_layers)
      return InvalidArgument("{} has {} entries for {} layers", key, v->arr.size(), n_layers);
    for (int l = 0; l < n_layers; ++l) local[l] = v->arr[l].i != 0;
    return local;
  }
  if (v != nullptr) {
    ASSIGN_OR_RETURN(int64_t n, f.GetInt(key));
    if (n < 0 || n > std::numeric_limits<int>::max())
      return InvalidArgument("{} = {} is out of range", key, n);
    period = static_cast<int>(n);
  }
  // llama.cpp's set_swa_pattern: the last layer of each period is global
  // (period 0: none is).
  for (int l = 0; l < n_layers; ++l) local[l] = period <= 0 || l % period != period - 1;
  return local;
}

}  // namespace

const ArchRecipe* FindArchRecipe(std::string_view arch) {
  for (const ArchRecipe& r : kRecipes)
    if (r.name == arch) return &r;
  return nullptr;
}

std::string SupportedArchitectures() {
  std::string out;
  for (const ArchRecipe& r : kRecipes) {
    if (!out.empty()) out += ", ";
    out += r.name;
  }
  return out;
}

Status ApplyArchRecipe(const ArchRecipe& recipe, const GgufFile& f, ModelConfig* cfg) {
  const std::string p = std::string(recipe.name) + ".";
  // The KV cache holds one head_dim for K and V alike.
  ASSIGN_OR_RETURN(int64_t v_dim, f.GetIntOr(p + "attention.value_length", cfg->head_dim));
  if (v_dim != cfg->head_dim)
    return Unimplemented("{}attention.value_length = {} differs from the key length {}", p, v_dim,
                         cfg->head_dim);
  cfg->activation = recipe.activation;
  cfg->rope = recipe.rope;
  cfg->qkv_bias = recipe.qkv_bias;
  cfg->qk_norm = recipe.qk_norm;
  cfg->post_norms = recipe.post_norms;
  cfg->embed_scale = recipe.embed_scale_sqrt_d ? std::sqrt(static_cast<float>(cfg->d_model)) : 1.f;
  if (recipe.global_every > 0) {
    ASSIGN_OR_RETURN(int64_t window, f.GetIntOr(p + "attention.sliding_window", 0));
    if (window < 0 || window > cfg->context_length)
      return InvalidArgument("{}attention.sliding_window = {} is invalid", p, window);
    cfg->sliding_window = static_cast<int>(window);
    ASSIGN_OR_RETURN(cfg->local_layers, ReadLocalLayers(f, p + "attention.sliding_window_pattern",
                                                        recipe.global_every, cfg->n_layers));
    ASSIGN_OR_RETURN(double theta, f.GetFloatOr(p + "rope.freq_base_swa", recipe.rope_theta_local));
    if (!(theta > 0)) return InvalidArgument("{}rope.freq_base_swa must be positive", p);
    cfg->rope_theta_local = static_cast<float>(theta);
  }
  ASSIGN_OR_RETURN(double cap, f.GetFloatOr(p + "final_logit_softcapping", 0.0));
  if (!(cap >= 0 && std::isfinite(cap)))
    return InvalidArgument("{}final_logit_softcapping = {} is invalid", p, cap);
  cfg->final_logit_softcap = static_cast<float>(cap);
  return Status::Ok();
}

}  // namespace brisk
