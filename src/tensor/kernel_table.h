// Internal: GGUF block structs and the per-ISA kernel table. Included by the
// per-ISA kernel files (*_avx2.cc, *_avx512.cc), so it must stay free of
// inline functions and templates: only <cstdint>/<cstddef> and plain structs.
// (An inline function instantiated in an AVX-512 file could be the copy the
// linker keeps for the whole program.)
#pragma once

#include <cstddef>
#include <cstdint>

namespace brisk {

// ---- GGUF blocks (packed, little-endian; f16 fields are raw IEEE half bits) ----
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];  // element j = low nibble of qs[j], element j+16 = high nibble
};
struct BlockQ4_1 {
  uint16_t d, m;  // x = d*q + m
  uint8_t qs[16];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct BlockQ8_1 {
  uint16_t d, s;  // s = d * sum(qs)
  int8_t qs[32];
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];  // 8 x (6-bit scale, 6-bit min)
  uint8_t qs[128];     // 64-element chunk c: qs[32c..32c+32) low nibbles = sub-block 2c,
                       // high nibbles = sub-block 2c+1
};
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];  // one per 16 elements
  uint16_t d;
};
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ8_0) == 34 &&
                  sizeof(BlockQ8_1) == 36 && sizeof(BlockQ4_K) == 144 && sizeof(BlockQ6_K) == 210 &&
                  sizeof(BlockQ8_K) == 292,
              "GGUF block layout");

// Weight kinds with a matmul kernel: indices into KernelTable arrays.
enum WeightKind : int {
  kKindF32 = 0,
  kKindF16,
  kKindBF16,
  kKindQ8_0,
  kKindQ4_0,
  kKindQ4_1,
  kKindQ4_K,
  kKindQ6_K,
  kNumWeightKinds
};

// Activations quantized for a matmul against quantized weights. Per token: k
// int8 quants in groups of `group` elements (16 for Q6_K weights, else 32),
// one float scale per group (x ~= d*q, d = amax/127), and one 4-byte aux
// value per group:
//  - weights with an integer zero point z (Q4_0: 8, Q8_0: 128 as kernels store
//    q+128 as unsigned, Q6_K: 32): int32 aux = -z * sum(q);
//  - weights with a float min (Q4_1, Q4_K): float aux = d * sum(q).
// So a group's dot product is d_w*d_x*(sum(qw*qx) + aux) or
// d_w*d_x*sum(qw*qx) + min_w*aux.
struct QuantActs {
  const int8_t* q = nullptr;  // token t: q + t*q_stride (rows 64-byte aligned)
  int64_t q_stride = 0;
  const float* d = nullptr;   // token t, group g: d[t*nb + g]
  const void* aux = nullptr;  // int32 or float, indexed as d
  int64_t nb = 0;
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
// (packed_panel_bytes(k) bytes); missing rows are zero.
typedef void (*PackPanelFn)(const uint8_t* w, int64_t row_bytes, int64_t rows_valid, int64_t k,
                            uint8_t* dst);

struct KernelTable {
  const char* name;
  // Rows per packed panel; threads split rows in multiples of it.
  int panel_rows;
  // GGUF-layout matmul per weight kind (any n_tokens).
  MatMulFn matmul[kNumWeightKinds];
  // Repacked layout: bytes per panel of k columns (0: kind not repacked),
  // packer, and the matmul over packed panels.
  int64_t (*packed_panel_bytes)(int kind, int64_t k);
  PackPanelFn pack_panel[kNumWeightKinds];
  MatMulFn matmul_packed[kNumWeightKinds];
  // Quantizes n floats (n % group == 0) into q, d, aux as QuantActs describes;
  // zero_point 0 selects the float aux (d * sum(q)).
  void (*quantize_acts)(const float* x, int64_t n, int group, int zero_point, int8_t* q, float* d,
                        void* aux);
  float (*dot_f16_f32)(const uint16_t* a, const float* b, int64_t n);
  void (*axpy_f16)(float alpha, const uint16_t* x, float* y, int64_t n);
  void (*f32_to_f16)(const float* src, uint16_t* dst, int64_t n);
  void (*f16_to_f32)(const uint16_t* src, float* dst, int64_t n);
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  void (*axpy_f32)(float alpha, const float* x, float* y, int64_t n);
  void (*scale_f32)(float* x, float s, int64_t n);
};

// Per-thread scratch MatMul hands each task: one packed panel of up to 16
// rows (k elements) plus n tokens of activations re-laid out, with slack.
#define BRISK_MATMUL_TMP_BYTES(k, n) ((int64_t)(k) * (40 + 2 * (int64_t)(n)) + 16384)

// Tables compiled per ISA (each defined in its own file).
const KernelTable* GetScalarTable();
const KernelTable* GetAvx2Table();
const KernelTable* GetAvx512Table();

}  // namespace brisk
