// Tensor element formats, numbered as ggml/GGUF number them, and one traits
// entry per format: the single source of what Brisk knows about it. A row of
// n elements is n / block_size blocks of block_bytes each.
//
// Adding a weight format = its DType id (below, if new), one entry in the
// table (format_traits.cc) with its block struct (quant_blocks.h) and
// reference functions (quant_ref*.cc), and its kernels: a WeightKind slot
// (kernel_table.h) filled in every ISA's KernelTable (kernels_scalar.cc,
// matmul_tiles*.inc); blocks from the gguf package's numpy dequantizer in
// tests/fixtures/quant_dequant.bin (tests/make_quant_fixtures.py). The GGUF
// reader, the model loader, MatMul and the tests (format_traits_test.cc walks
// the table) read everything else from the entry.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace brisk {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
  // Brisk's own (not a ggml type; brisk quantize never writes it to a GGUF
  // file): the load-time precision fp8, see BlockFP8 in quant_blocks.h.
  kFP8_E4M3 = 60,
};

struct FormatTraits {
  DType type;
  const char* name;  // as ggml names it: "Q4_K"
  int block_size;    // elements per block (1 for plain floats)
  int block_bytes;   // bytes per block

  // Reference (scalar) conversion of a row of n elements (n a multiple of
  // block_size; the packed side holds RowBytes(type, n) bytes). They define
  // the format's meaning; kernels are tested against them. Null for formats
  // Brisk only knows the geometry of (it can read past them in a GGUF file).
  void (*quantize)(const float* src, void* dst, int64_t n);
  void (*dequantize)(const void* src, float* dst, int64_t n);

  // As a matmul weight (kernel_slot < 0: not a weight format):
  // - kernel_slot: the WeightKind whose entry in every ISA's KernelTable
  //   holds this format's matmul kernels (scalar, AVX2, AVX-512);
  // - vec_dot_type: the activation format its dot product pairs with, as in
  //   ggml (Q4_0 -> Q8_0, Q4_1 -> Q8_1, K-quants -> Q8_K, floats -> F32);
  // - act_group, act_zero_point: how MatMul quantizes the activations for it
  //   (QuantActs in kernel_table.h): int8 in groups of act_group elements
  //   (0: activations stay F32), with aux = -act_zero_point * sum(q) per
  //   group, or d * sum(q) as a float when act_zero_point is 0 (formats with
  //   a float min). Same 8-bit precision as vec_dot_type; group 32 scales are
  //   rounded to f16 as Q8_0/Q8_1 store them.
  int kernel_slot;
  DType vec_dot_type;
  int act_group;
  int act_zero_point;
};

// Every format this build knows, in GGUF id order.
std::span<const FormatTraits> AllFormats();
// The entry of a GGUF type id, or null for an id this build does not know.
const FormatTraits* FindFormat(uint32_t ggml_type);
// The entry of a known type (every DType enumerator has one).
const FormatTraits& FormatOf(DType t);

const char* DTypeName(DType t);  // "unknown" for an id outside the table
// Bytes of a row of n elements; -1 if n is not a multiple of the block size
// (or the type is unknown).
int64_t RowBytes(DType t, int64_t n);

// True if `t` has matmul kernels (and so MatMul and DequantizeRow take it).
bool IsMatMulWeightType(DType t);
// "F32, F16, ..." : the weight formats with matmul kernels, for messages.
std::string MatMulWeightTypeNames();

// The format's reference conversions (see FormatTraits); asserts that `t`
// has them. DequantizeRow takes every weight format and Q8_1/Q8_K.
void QuantizeRow(DType t, const float* src, void* dst, int64_t n);
void DequantizeRow(DType t, const void* src, float* dst, int64_t n);

}  // namespace brisk
