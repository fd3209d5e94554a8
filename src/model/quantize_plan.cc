// PlanQuantization: which format each tensor gets. The mixed recipes follow
// llama.cpp's llama_tensor_get_type (src/llama-quant.cpp) for the dense,
// non-Falcon models Brisk runs; its MoE and IQ1/IQ2/IQ3 branches do not apply.
#include <algorithm>
#include <array>
#include <cctype>

#include "model/quantize.h"

namespace brisk {
namespace {

constexpr int kQK_K = 256;

struct TargetEntry {
  const char* name;
  DType base;
  QuantRecipe recipe;
  uint32_t ftype;  // llama.h llama_ftype
};

// general.file_type numbers as llama.h's llama_ftype enumerates them. Plain
// K and IQ4 types have no "all tensors" ftype in llama.cpp; they carry the
// nearest one (Q3_K_S, Q4_K_S, Q5_K_S).
constexpr std::array<TargetEntry, 18> kTargets = {{
    {"f32", DType::kF32, QuantRecipe::kUniform, 0},
    {"f16", DType::kF16, QuantRecipe::kUniform, 1},
    {"bf16", DType::kBF16, QuantRecipe::kUniform, 32},
    {"q8_0", DType::kQ8_0, QuantRecipe::kUniform, 7},
    {"q4_0", DType::kQ4_0, QuantRecipe::kUniform, 2},
    {"q4_1", DType::kQ4_1, QuantRecipe::kUniform, 3},
    {"q5_0", DType::kQ5_0, QuantRecipe::kUniform, 8},
    {"q5_1", DType::kQ5_1, QuantRecipe::kUniform, 9},
    {"q2_k", DType::kQ2_K, QuantRecipe::kUniform, 10},
    {"q3_k", DType::kQ3_K, QuantRecipe::kUniform, 11},
    {"q4_k", DType::kQ4_K, QuantRecipe::kUniform, 14},
    {"q5_k", DType::kQ5_K, QuantRecipe::kUniform, 16},
    {"q6_k", DType::kQ6_K, QuantRecipe::kUniform, 18},
    {"iq4_nl", DType::kIQ4_NL, QuantRecipe::kUniform, 25},
    {"iq4_xs", DType::kIQ4_XS, QuantRecipe::kUniform, 30},
    {"q4_k_m", DType::kQ4_K, QuantRecipe::kQ4_K_M, 15},
    {"q4_k_s", DType::kQ4_K, QuantRecipe::kQ4_K_S, 14},
    {"q5_k_m", DType::kQ5_K, QuantRecipe::kQ5_K_M, 17},
}};

bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// A weight matrix llama.cpp would quantize.
bool IsQuantizableMatrix(const GgufTensorInfo& t) {
  const std::string_view n = t.name;
  return t.dims.size() >= 2 && EndsWith(n, "weight") && !Contains(n, "_norm.weight") &&
         !Contains(n, "position_embd") && !Contains(n, "token_types") && !Contains(n, "ssm_conv1d");
}

// llama.cpp's "more bits" layers: the first and last eighth, and every third
// layer in between.
bool UseMoreBits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

struct RecipeState {
  bool has_output = false;
  int n_attn_v = 0, n_ffn_down = 0;
  int i_attn_v = 0, i_ffn_down = 0;
};

// llama.cpp counts attn_v / ffn_down tensors in its loader's order, which
// sorts by layer number: the count is the layer index. Take it from the name
// ("blk.N."), so the file's tensor order does not matter; `counter` for
// names without one.
int LayerIndex(std::string_view name, int* counter) {
  const int fallback = (*counter)++;
  if (name.substr(0, 4) != "blk.") return fallback;
  int layer = 0;
  size_t i = 4;
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return fallback;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i)
    layer = layer * 10 + (name[i] - '0');
  return layer;
}

DType RecipeType(const QuantTarget& target, const GgufTensorInfo& t, RecipeState& s) {
  const std::string_view name = t.name;
  const QuantRecipe r = target.recipe;
  if (name == "output.weight" || (!s.has_output && name == "token_embd.weight")) {
    // The output projection (or the token embedding that doubles as it).
    return t.dims[0] % kQK_K != 0 ? DType::kQ8_0 : DType::kQ6_K;
  }
  if (name == "token_embd.weight") return target.base;
  if (Contains(name, "attn_v.weight")) {
    const int i = LayerIndex(name, &s.i_attn_v);
    if ((r == QuantRecipe::kQ4_K_M || r == QuantRecipe::kQ5_K_M) && UseMoreBits(i, s.n_attn_v))
      return DType::kQ6_K;
    if (r == QuantRecipe::kQ4_K_S && i < 4) return DType::kQ5_K;
    return target.base;
  }
  if (Contains(name, "ffn_down")) {
    const int i = LayerIndex(name, &s.i_ffn_down);
    if ((r == QuantRecipe::kQ4_K_M || r == QuantRecipe::kQ5_K_M) && UseMoreBits(i, s.n_ffn_down))
      return DType::kQ6_K;
    if (r == QuantRecipe::kQ4_K_S && i < s.n_ffn_down / 8) return DType::kQ5_K;
    return target.base;
  }
  if (Contains(name, "attn_qkv.weight")) {
    if (r == QuantRecipe::kQ4_K_M) return DType::kQ5_K;
    if (r == QuantRecipe::kQ5_K_M) return DType::kQ6_K;
  }
  return target.base;
}

// llama.cpp's fallback for a format whose block does not divide the rows.
DType FallbackOf(DType t) {
  switch (t) {
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kIQ4_XS: return DType::kIQ4_NL;
    case DType::kQ4_K: return DType::kQ5_0;
    case DType::kQ5_K: return DType::kQ5_1;
    case DType::kQ6_K: return DType::kQ8_0;
    default: return DType::kF16;
  }
}

}  // namespace

Expected<QuantTarget> ParseQuantTarget(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const TargetEntry& e : kTargets) {
    if (lower == e.name) return QuantTarget{e.name, e.base, e.recipe, e.ftype};
  }
  return InvalidArgument("unknown quantization type '{}'; valid types: {}", name,
                         QuantTargetNames());
}

std::string QuantTargetNames() {
  std::string s;
  for (const TargetEntry& e : kTargets) {
    if (!s.empty()) s += ", ";
    s += e.name;
  }
  return s;
}

int QuantPlan::fallbacks() const {
  return static_cast<int>(std::count_if(tensors.begin(), tensors.end(),
                                        [](const TensorPlan& t) { return !t.fallback.empty(); }));
}

Expected<QuantPlan> PlanQuantization(std::span<const GgufTensorInfo> tensors,
                                     const QuantTarget& target) {
  QuantPlan plan;
  plan.target = target;
  RecipeState state;
  for (const GgufTensorInfo& t : tensors) {
    if (t.name == "output.weight") state.has_output = true;
    if (!IsQuantizableMatrix(t)) continue;
    if (Contains(t.name, "attn_v.weight")) ++state.n_attn_v;
    if (Contains(t.name, "ffn_down")) ++state.n_ffn_down;
  }
  for (const GgufTensorInfo& t : tensors) {
    const FormatTraits* from_format = FindFormat(t.ggml_type);
    if (from_format == nullptr || t.dims.empty())
      return InvalidArgument("tensor '{}' has ggml type {}, which this build does not know", t.name,
                             t.ggml_type);
    TensorPlan p{t.name, t.dims, from_format->type, from_format->type, {}};
    if (t.dims.size() == 1) p.to = DType::kF32;  // norms, biases
    if (t.dims.size() >= 2 && IsQuantizableMatrix(t)) {
      DType want =
          target.recipe == QuantRecipe::kUniform ? target.base : RecipeType(target, t, state);
      DType to = want;
      if (t.dims[0] % FormatOf(to).block_size != 0) {
        to = FallbackOf(to);
        if (t.dims[0] % FormatOf(to).block_size != 0) to = DType::kF16;
        p.fallback =
            fmt::format("{} needs rows of a multiple of {}, this row has {}: using {}",
                        DTypeName(want), FormatOf(want).block_size, t.dims[0], DTypeName(to));
      }
      p.to = to;
    }
    if (!p.copy()) {
      if (FormatOf(p.from).dequantize == nullptr)
        return InvalidArgument("tensor '{}': cannot convert from {} (no dequantizer)", t.name,
                               DTypeName(p.from));
      if (FormatOf(p.to).quantize == nullptr)
        return InvalidArgument("tensor '{}': cannot convert to {} (no quantizer)", t.name,
                               DTypeName(p.to));
      if (!IsFloat(p.from)) plan.requantizes = true;
    }
    plan.tensors.push_back(std::move(p));
  }
  return plan;
}

}  // namespace brisk
