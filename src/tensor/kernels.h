// CPU kernels for the forward pass: quantize / dequantize rows, the weight x
// activation matmul (GEMV for decode, register-tiled GEMM for prefill), and the
// small vector helpers attention needs. Every kernel has a scalar reference
// twin; SIMD variants (AVX2, AVX-512 VNNI) are picked once at startup from the
// CPU (BRISK_KERNELS=scalar|avx2|avx512 forces one).
//
// Weight types with a MatMul: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K.
// Rows are laid out exactly as in GGUF: row r of a [rows x k] weight starts at
// (const uint8_t*)w + r * RowBytes(type, k).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tensor/dtype.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace brisk {

// ---- Scalar conversions (IEEE half, bfloat16) -------------------------------
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);  // round to nearest even
float BF16ToFloat(uint16_t h);
uint16_t FloatToBF16(float f);  // round to nearest even

// ---- Types -------------------------------------------------------------------
// True if MatMul and DequantizeRow accept `t` as a weight type.
bool IsMatMulWeightType(DType t);
// The GGUF activation type the weight type's dot product pairs with
// (Q4_0->Q8_0, Q4_1->Q8_1, Q8_0->Q8_0, Q4_K/Q6_K->Q8_K, F32/F16/BF16->F32).
// Informational: MatMul quantizes activations itself, into an internal
// layout with the same 8-bit precision.
DType VecDotType(DType weight);

// ---- Rows ----------------------------------------------------------------------
// dst[0..n) = the n values encoded at src. `t` is any weight type above or
// Q8_1/Q8_K; n must be a multiple of the block size.
void DequantizeRow(DType t, const void* src, float* dst, int64_t n);
// Reference quantizers: Q8_0, Q8_1, Q8_K, Q4_0, Q4_1, F16, BF16, F32 (copy).
// n must be a multiple of the block size. dst holds RowBytes(t, n) bytes.
void QuantizeRow(DType t, const float* src, void* dst, int64_t n);

// ---- MatMul --------------------------------------------------------------------
struct KernelTable;  // one ISA's kernels, see "Variants" below
// Reusable buffers for MatMul, owned by the caller (one per thread that calls
// MatMul). Grows on first use, then never reallocates for the same shapes.
struct MatMulScratch {
  MatMulScratch();
  ~MatMulScratch();
  MatMulScratch(const MatMulScratch&) = delete;
  MatMulScratch& operator=(const MatMulScratch&) = delete;
  // 64-byte aligned buffer of at least `bytes` bytes (contents not kept).
  uint8_t* Reserve(size_t bytes);

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A weight matrix prepared for MatMul at load time. The active variant may
// repack the rows into its own interleaved layout (a copy owned here: the
// same size as the GGUF data, about); otherwise it points at the caller's
// GGUF bytes, which must then outlive it. Prefer this to the raw-pointer
// MatMul: decode (GEMV) is much faster on repacked rows.
struct MatMulWeight {
  DType type = DType::kF32;
  int64_t rows = 0, k = 0;
  const void* gguf = nullptr;               // original GGUF rows (always valid)
  std::shared_ptr<uint8_t[]> packed;        // repacked rows, or null
  const KernelTable* packed_for = nullptr;  // the table whose layout `packed` is in
};

// Errors: unsupported type (kUnimplemented), k not a multiple of the block
// size or non-positive shape (kInvalidArgument). `allow_repack = false` keeps
// the GGUF layout (no copy).
Expected<MatMulWeight> PrepareMatMulWeight(DType type, const void* w, int64_t rows, int64_t k,
                                           bool allow_repack = true);

// y[t*ldy + r] = sum_i W[r][i] * x[t*ldx + i] for r < w.rows, t < n_tokens.
void MatMul(const MatMulWeight& w, const float* x, int64_t ldx, int64_t n_tokens, float* y,
            int64_t ldy, ThreadPool& pool, MatMulScratch& scratch);
// Dense form: ldx = k, ldy = rows.
void MatMul(const MatMulWeight& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatMulScratch& scratch);

// Several weights with the same k applied to the same x in one pass:
// outs[i].y[t*outs[i].ldy + r] = sum_j outs[i].w[r][j] * x[t*ldx + j]. x is
// quantized once and one parallel region covers every weight's rows (q/k/v,
// gate/up). Results are bitwise those of separate MatMul calls. Weights of
// different types or layouts (or more than 8) fall back to one call each.
struct MatMulOut {
  const MatMulWeight* w = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
};
void MatMulFused(std::span<const MatMulOut> outs, const float* x, int64_t ldx, int64_t n_tokens,
                 ThreadPool& pool, MatMulScratch& scratch);

// Raw-pointer form (GGUF layout, no repacking):
// y[t*rows + r] = sum_i W[r][i] * x[t*k + i] for r < rows, t < n_tokens.
// x is quantized to 8 bits once (split across threads), then rows are split
// across the pool's threads. k must be a multiple of the weight block size.
void MatMul(DType wtype, const void* w, int64_t rows, int64_t k, const float* x, int64_t n_tokens,
            float* y, ThreadPool& pool, MatMulScratch& scratch);
// Same, with explicit strides: x token t at x + t*ldx, output at y[t*ldy + r]
// (ldx >= k, ldy >= rows).
void MatMulStrided(DType wtype, const void* w, int64_t rows, int64_t k, const float* x, int64_t ldx,
                   int64_t n_tokens, float* y, int64_t ldy, ThreadPool& pool,
                   MatMulScratch& scratch);

// ---- Vector helpers (attention over F16 KV, norms) -------------------------------
float DotF16F32(const uint16_t* a, const float* b, int64_t n);
void AxpyF16(float alpha, const uint16_t* x, float* y, int64_t n);  // y += alpha*x
void F32ToF16Row(const float* src, uint16_t* dst, int64_t n);
void F16ToF32Row(const uint16_t* src, float* dst, int64_t n);
float DotF32(const float* a, const float* b, int64_t n);
void AxpyF32(float alpha, const float* x, float* y, int64_t n);  // y += alpha*x
void ScaleF32(float* x, float s, int64_t n);                     // x *= s

// ---- Variants ------------------------------------------------------------------
// "scalar", "avx2" or "avx512": the table every function above uses.
const char* ActiveKernelVariant();

// KernelTable (one ISA's kernels) is defined in tensor/kernel_table.h, for
// tests and benches. The active table:
const KernelTable& ActiveKernels();
// Every variant compiled in that this CPU can run, scalar first.
std::vector<const KernelTable*> AvailableKernelTables();
const char* KernelTableName(const KernelTable& table);
// MatMulStrided / PrepareMatMulWeight / MatMul with an explicit table instead
// of the active one (a weight packed for another table uses its GGUF rows).
void MatMulWith(const KernelTable& table, DType wtype, const void* w, int64_t rows, int64_t k,
                const float* x, int64_t ldx, int64_t n_tokens, float* y, int64_t ldy,
                ThreadPool& pool, MatMulScratch& scratch);
Expected<MatMulWeight> PrepareMatMulWeightFor(const KernelTable& table, DType type, const void* w,
                                              int64_t rows, int64_t k);
void MatMulWith(const KernelTable& table, const MatMulWeight& w, const float* x, int64_t ldx,
                int64_t n_tokens, float* y, int64_t ldy, ThreadPool& pool, MatMulScratch& scratch);

}  // namespace brisk
