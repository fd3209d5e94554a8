#include "model/arch_recipe.h"

#include <cmath>

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
    cfg->global_every = recipe.global_every;
    cfg->rope_theta_local = recipe.rope_theta_local;
  }
  return Status::Ok();
}

}  // namespace brisk
