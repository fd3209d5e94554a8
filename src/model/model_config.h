// A decoder's hyper-parameters and its architecture's recipe, read from the
// GGUF's metadata (`{arch}.*` keys, llama.cpp's names). What differs between
// architectures is data here (the recipe fields, set by arch_recipe.h from
// the architecture name), not another forward pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/rope_scaling.h"
#include "util/status.h"

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
  std::vector<bool> local_layers;    // with a window: one flag per layer, true = sliding-window
  float rope_theta_local = 10000.f;  // RoPE base of the local layers
  float final_logit_softcap = 0;     // > 0: logits = cap * tanh(logits / cap)
  bool IsLocal(int layer) const {
    return sliding_window > 0 && static_cast<size_t>(layer) < local_layers.size() &&
           local_layers[layer];
  }
};

// The config of the model in `f`: the common hyper-parameters, the file's
// RoPE scaling (or `rope_scaling`, the serving profile's, in its place; see
// LoadOptions), the architecture's recipe, and from the tensor infos the
// vocabulary size (token_embd.weight's rows) and whether the output matrix is
// the embedding's (no output.weight). Errors: an unsupported architecture
// (Unimplemented), a missing or out-of-range key, a missing or misshapen
// token_embd.weight.
Expected<ModelConfig> ReadModelConfig(const GgufFile& f,
                                      const std::optional<RopeScaling>& rope_scaling,
                                      int64_t context_tokens);

}  // namespace brisk
