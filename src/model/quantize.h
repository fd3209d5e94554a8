// `brisk quantize`: convert a GGUF model's weight matrices to another ggml
// format (or a mixed recipe such as Q4_K_M), streaming the result to a new
// GGUF file.
//
// Planning is pure: PlanQuantization() decides, from tensor names and shapes
// alone, which format each tensor gets. Rules (docs/quantize.md):
// - 1-D tensors (norms, biases) are stored F32; tensors that are not weight
//   matrices (names not ending in "weight", *_norm.weight) keep their format;
// - plain types (q4_0, q4_k, ...) give every matrix that format, as
//   llama-quantize --pure does; q4_k_m, q4_k_s and q5_k_m follow llama.cpp's
//   recipes (output / tied token_embd -> Q6_K, or Q8_0 when rows are not a
//   multiple of 256; attn_v and ffn_down get more bits on some layers);
// - a row length that is not a multiple of the format's block size falls back
//   as llama.cpp does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0,
//   Q2_K/Q3_K/IQ4_XS -> IQ4_NL), to F16 when even that does not divide.
// RunQuantization() dequantizes each source row to f32 and quantizes it with
// the format's reference quantizer, rows in parallel; a tensor whose format
// does not change is copied byte for byte.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf.h"
#include "tensor/format_traits.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

enum class QuantRecipe { kUniform, kQ4_K_M, kQ4_K_S, kQ5_K_M };

struct QuantTarget {
  std::string name;  // as given on the command line: "q4_k_m"
  DType base;        // the format of most matrices
  QuantRecipe recipe = QuantRecipe::kUniform;
  uint32_t ftype;  // llama.cpp's llama_ftype number, written as general.file_type
  bool is_float() const {
    return base == DType::kF32 || base == DType::kF16 || base == DType::kBF16;
  }
};

// "q4_k_m" -> its target; InvalidArgument listing the valid names otherwise.
Expected<QuantTarget> ParseQuantTarget(std::string_view name);
// "f32, f16, bf16, q8_0, ...": every name ParseQuantTarget takes.
std::string QuantTargetNames();

struct TensorPlan {
  std::string name;
  std::vector<int64_t> dims;
  DType from;
  DType to;
  std::string fallback;  // non-empty when `to` is a fallback: why
  bool copy() const { return from == to; }
};

struct QuantPlan {
  QuantTarget target;
  std::vector<TensorPlan> tensors;
  // True when some converted tensor's source format is itself quantized (not
  // F32/F16/BF16): quality is bounded by the source's.
  bool requantizes = false;
  int fallbacks() const;
};

// The plan for `tensors` (only names, dims and ggml_type are read).
// InvalidArgument if a source tensor's format is one this build cannot
// dequantize but would have to convert.
Expected<QuantPlan> PlanQuantization(std::span<const GgufTensorInfo> tensors,
                                     const QuantTarget& target);

struct QuantizeProgress {
  size_t index = 0;   // tensor index in the plan
  size_t count = 0;   // tensors in the plan
  bool done = false;  // false: about to start tensor `index`; true: it is written
  uint64_t in_bytes_done = 0, in_bytes_total = 0;
  uint64_t out_bytes_done = 0;  // tensor data written so far
};

struct QuantizeStats {
  uint64_t in_file_bytes = 0, out_file_bytes = 0;
  uint64_t in_data_bytes = 0, out_data_bytes = 0;  // tensor data only
  int64_t n_weights = 0;                           // elements of all tensors
  double seconds = 0;
  double bits_per_weight() const {
    return n_weights ? 8.0 * static_cast<double>(out_data_bytes) / static_cast<double>(n_weights)
                     : 0;
  }
};

// Writes `in` converted as `plan` says to `out_path` (via out_path + ".tmp",
// renamed at the end). Metadata is copied unchanged except general.file_type
// (the target's ftype) and general.quantization_version (2 when the target is
// quantized, removed otherwise). `plan` must come from PlanQuantization(in's
// tensors). `on_progress`, if set, is called before and after each tensor.
Expected<QuantizeStats> RunQuantization(
    const GgufFile& in, const QuantPlan& plan, const std::string& out_path, ThreadPool& pool,
    const std::function<void(const QuantizeProgress&)>& on_progress = {});

}  // namespace brisk
