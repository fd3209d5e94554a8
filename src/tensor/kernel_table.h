// Internal: the per-ISA kernel table. Included by the per-ISA kernel files
// (*_avx2.cc, *_avx512.cc), so it must stay free of inline functions and
// templates: only <cstdint>/<cstddef> and plain structs.
// (An inline function instantiated in an AVX-512 file could be the copy the
// linker keeps for the whole program.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/quant_blocks.h"

namespace brisk {

// Slots of KernelTable::formats: one per weight format with matmul kernels.
// A format's traits entry (format_traits.h) names its slot.
enum WeightKind : int {
  kKindF32 = 0,
  kKindF16,
  kKindBF16,
  kKindQ8_0,
  kKindQ4_0,
  kKindQ4_1,
  kKindQ4_K,
  kKindQ6_K,
  kKindQ5_0,
  kKindQ5_1,
  kKindQ5_K,
  kKindQ3_K,
  kKindQ2_K,
  kKindIQ4_NL,
  kKindIQ4_XS,
  kKindFP8,
  kNumWeightKinds
};

// Activations quantized for a matmul against quantized weights, as the
// weight format's traits ask (act_group, act_zero_point). Per token: k int8
// quants in groups of `group` elements, one float scale per group
// (x ~= d*q, d = amax/127), and one 4-byte aux value per group:
//  - weights with an integer zero point z (zero_point > 0; Q4_0: 8, Q5_0:
//    16, Q3_K: 4, Q6_K: 32, Q8_0 and IQ4_*: 128 as kernels may store
//    q+128 as unsigned): int32 aux = -z * sum(q);
//  - weights with a float min (zero_point 0; Q4_1, Q5_1, Q2_K, Q4_K, Q5_K):
//    float aux = d * sum(q).
// So a group's dot product is d_w*d_x*(sum(qw*qx) + aux) or
// d_w*d_x*sum(qw*qx) + min_w*aux.
struct QuantActs {
  const int8_t* q = nullptr;  // token t: q + t*q_stride (rows 64-byte aligned)
  int64_t q_stride = 0;
  const float* d = nullptr;   // token t, group g: d[t*nb + g]
  const void* aux = nullptr;  // int32 or float, indexed as d
  int64_t nb = 0;             // groups per token (k / group)
  int group = 0;
  int zero_point = 0;
};

// One thread's share of a matmul: rows [0, rows) of `w` (already offset to
// this share) against all tokens; y[t*ldy + r].
struct MatMulTask {
  const uint8_t* w = nullptr;  // GGUF rows, or packed panels for matmul_packed
  int64_t row_bytes = 0;       // GGUF bytes per row
  int64_t k = 0;
  int64_t rows = 0;
  int64_t n_tokens = 0;
  const float* x = nullptr;  // float activations (F32/F16/BF16 weights)
  int64_t ldx = 0;
  QuantActs xq;  // quantized activations (quantized weights)
  float* y = nullptr;
  int64_t ldy = 0;
  uint8_t* tmp = nullptr;  // per-thread scratch of MatMulTmpBytes(k) bytes, 64-aligned
};

typedef void (*MatMulFn)(const MatMulTask* task);
// Packs `rows_valid` (<= panel_rows) GGUF rows into one panel at dst
// (panel_bytes(k) bytes); missing rows are zero.
typedef void (*PackPanelFn)(const uint8_t* w, int64_t row_bytes, int64_t rows_valid, int64_t k,
                            uint8_t* dst);

// One weight format's kernels in one ISA (no member initializers: no
// implicit inline constructor for a per-ISA file to instantiate; members a
// table's initializer leaves out are null).
struct FormatKernels {
  MatMulFn matmul;  // on GGUF rows, any n_tokens
  // Repacked layout, or all null when this ISA keeps the GGUF rows: bytes
  // per panel of panel_rows rows x k columns, the packer, and the matmul
  // over packed panels.
  int64_t (*panel_bytes)(int64_t k);
  PackPanelFn pack_panel;
  MatMulFn matmul_packed;
};

struct KernelTable {
  const char* name;
  // Rows per packed panel; threads split rows in multiples of it.
  int panel_rows;
  FormatKernels formats[kNumWeightKinds];
  // Quantizes n floats (n % group == 0) into q, d, aux as QuantActs describes;
  // zero_point 0 selects the float aux (d * sum(q)).
  void (*quantize_acts)(const float* x, int64_t n, int group, int zero_point, int8_t* q, float* d,
                        void* aux);
  void (*f32_to_f16)(const float* src, uint16_t* dst, int64_t n);
};

// Per-thread scratch MatMul hands each task: one packed panel of up to 16
// rows (k elements) plus n tokens of activations re-laid out, with slack.
#define BRISK_MATMUL_TMP_BYTES(k, n) ((int64_t)(k) * (40 + 2 * (int64_t)(n)) + 16384)

// Tables compiled per ISA (each defined in its own file).
const KernelTable* GetScalarTable();
const KernelTable* GetAvx2Table();
const KernelTable* GetAvx512Table();

}  // namespace brisk
