// Architectures as data: one table row per GGUF `general.architecture` says
// how its layers differ from the llama recipe (activation, RoPE layout, q/k/v
// biases, q/k norms, post-norms, embedding scale, sliding-window layers). The
// forward pass (Model) reads only the resulting ModelConfig fields.
#pragma once

#include <string>
#include <string_view>

#include "model/gguf.h"
#include "model/model_config.h"
#include "util/status.h"

namespace brisk {

struct ArchRecipe {
  std::string_view name;  // general.architecture; also the metadata key prefix
  ModelConfig::Activation activation = ModelConfig::Activation::kSilu;
  ModelConfig::Rope rope = ModelConfig::Rope::kPairs;
  bool qkv_bias = false;            // blk.N.attn_{q,k,v}.bias added after the projections
  bool qk_norm = false;             // blk.N.attn_{q,k}_norm on each head before RoPE
  bool post_norms = false;          // post_attention_norm / post_ffw_norm
  bool embed_scale_sqrt_d = false;  // embeddings multiplied by sqrt(d_model)
  // Sliding-window layers (window from <arch>.attention.sliding_window):
  // every global_every-th layer is global unless the file's
  // attention.sliding_window_pattern says otherwise; 0: no sliding window.
  int global_every = 0;
  float rope_theta_local = 10000.f;  // RoPE base of the local layers unless rope.freq_base_swa
};

// The recipe of `arch`, or null when Brisk does not run it.
const ArchRecipe* FindArchRecipe(std::string_view arch);

// "llama, mistral, ..." for error messages.
std::string SupportedArchitectures();

// Sets cfg's recipe fields from `recipe`, reading the architecture-specific
// keys of `f`, each defaulting to the recipe when absent: value_length (must
// equal the head dimension); for sliding-window recipes
// attention.sliding_window, attention.sliding_window_pattern (an integer
// period n: layer l is global when l % n == n - 1, 0: none is; or one bool
// per layer, true = sliding-window, as gguf-py writes it) and
// rope.freq_base_swa; final_logit_softcapping (none when absent). Call after
// the common hyper-parameters are set (it checks the window against
// cfg->context_length and the pattern against cfg->n_layers).
Status ApplyArchRecipe(const ArchRecipe& recipe, const GgufFile& f, ModelConfig* cfg);

}  // namespace brisk
