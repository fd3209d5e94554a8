// AVX-512 kernel table (F/BW/VL/DQ + VNNI): 16-row panels, vpdpbusd integer
// dot products. Everything is in an anonymous namespace: only
// GetAvx512Table() leaves this file (see kernel_table.h).
// GCC 12 reports its own _mm512_undefined_*() temporaries as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "tensor/kernel_table.h"
#include "tensor/quant_ref.h"

namespace brisk {
namespace {

constexpr const char* kTableName = "avx512";
constexpr int kP = 16;
// Q8_0 weights are stored as q+128 so vpdpbusd (unsigned x signed) applies;
// the activations' aux (-128*sum(q_x)) removes the offset exactly.
constexpr bool kQ8Offset = true;
typedef __m512i VI;
typedef __m512 VF;

VI ZeroI() { return _mm512_setzero_si512(); }
VI Set1I(int32_t v) { return _mm512_set1_epi32(v); }
VI LoadI(const void* p) { return _mm512_loadu_si512(p); }
VI AndI(VI a, VI b) { return _mm512_and_si512(a, b); }
VI AddI(VI a, VI b) { return _mm512_add_epi32(a, b); }
VI Srli16(VI a, int n) { return _mm512_srli_epi16(a, n); }
VI DotU8(VI acc, VI w, VI x) { return _mm512_dpbusd_epi32(acc, w, x); }
VI DotQ8(VI acc, VI w, VI x) { return _mm512_dpbusd_epi32(acc, w, x); }
int HSumI(VI a) { return _mm512_reduce_add_epi32(a); }
void StoreI8(int8_t* p, VI v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v));
}

VF ZeroF() { return _mm512_setzero_ps(); }
VF Set1F(float v) { return _mm512_set1_ps(v); }
VF LoadF(const float* p) { return _mm512_loadu_ps(p); }
VF Mul(VF a, VF b) { return _mm512_mul_ps(a, b); }
VF MaxF(VF a, VF b) { return _mm512_max_ps(a, b); }
VF AbsF(VF a) { return _mm512_abs_ps(a); }
VF Fmadd(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
VF Fnmadd(VF a, VF b, VF c) { return _mm512_fnmadd_ps(a, b, c); }
VF CvtF(VI a) { return _mm512_cvtepi32_ps(a); }
VI CvtRoundI(VF a) { return _mm512_cvtps_epi32(a); }
float HSumF(VF a) { return _mm512_reduce_add_ps(a); }
// The four sums of a, b, c, d at out[0..3]; each vector's lanes are added
// in the same order whichever slot it takes.
void HSum4F(VF a, VF b, VF c, VF d, float* out) {
  auto fold = [](VF v) {
    return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  };
  const __m256 ab = _mm256_hadd_ps(fold(a), fold(b)), cd = _mm256_hadd_ps(fold(c), fold(d));
  const __m256 abcd = _mm256_hadd_ps(ab, cd);
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}
float HMaxF(VF a) { return _mm512_reduce_max_ps(a); }
VF LoadHalfF(const void* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
}
VF LoadBF16F(const void* p) {
  VI v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}
VF LoadU8F(const void* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))));
}
VF LoadS8F(const void* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))));
}
void StoreF(float* p, VF v, int n) {
  if (n == kP) {
    _mm512_storeu_ps(p, v);
  } else {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
  }
}
void StoreHalf(uint16_t* p, VF v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

VI XorI(VI a, VI b) { return _mm512_xor_si512(a, b); }
VI Srli32(VI a, int n) { return _mm512_srli_epi32(a, n); }
VI GatherI(const void* base, VI offsets) { return _mm512_i32gather_epi32(offsets, base, 1); }
// Low 16 bits of each lane as a half.
VF HalfLoF(VI v) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v)); }

VI OrI(VI a, VI b) { return _mm512_or_si512(a, b); }
VI Slli32(VI a, int n) { return _mm512_slli_epi32(a, n); }
// The 16 bytes at p in every 128-bit lane; bytes of `table` picked by idx (0..15).
VI Broadcast16I(const void* p) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}
VI ShuffleI8(VI table, VI idx) { return _mm512_shuffle_epi8(table, idx); }
VI LoadU8I(const void* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}
// 32 E4M3 codes as floats times 2^-8 (kFp8Unit undoes it): each code
// sign-extended to 16 bits and shifted left 7 is the f16 with the same sign,
// exponent and mantissa bits (bias 15 instead of 7) once the sign-extension
// copies are masked. (The AVX2 table's f32 route would make E4M3 subnormals
// f32 subnormals, which cost microcode assists as inputs on Intel cores.)
constexpr float kFp8Unit = 256.f;
void LoadFP8x2F(const uint8_t* p, VF* lo, VF* hi) {
  __m512i h = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  h = _mm512_and_si512(_mm512_slli_epi16(h, 7), _mm512_set1_epi16(static_cast<int16_t>(0xBF80)));
  *lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
  *hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
}

// Tokens per register tile: NT int + NT float accumulators must fit the
// register file with room for the weights.
#define BRISK_TILE_TOKENS 12
#include "tensor/vec_ops.inc"

// After vec_ops.inc: the table at its end names those functions.
#include "tensor/matmul_tiles.inc"

}  // namespace

const KernelTable* GetAvx512Table() { return &kTable; }

}  // namespace brisk
