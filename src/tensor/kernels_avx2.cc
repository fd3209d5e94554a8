// AVX2 (+FMA, F16C) kernel table: 8-row panels, integer dot products with
// vpmaddubsw + vpmaddwd. Everything is in an anonymous namespace: only
// GetAvx2Table() leaves this file (see kernel_table.h).
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "tensor/kernel_table.h"
#include "tensor/quant_ref.h"

namespace brisk {
namespace {

constexpr const char* kTableName = "avx2";
constexpr int kP = 8;
// vpmaddubsw would saturate on (q+128) * x, so Q8_0 stays signed and uses the
// abs/sign trick: |w| * (x with w's sign).
constexpr bool kQ8Offset = false;
typedef __m256i VI;
typedef __m256 VF;

VI ZeroI() { return _mm256_setzero_si256(); }
VI Set1I(int32_t v) { return _mm256_set1_epi32(v); }
VI LoadI(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
VI AndI(VI a, VI b) { return _mm256_and_si256(a, b); }
VI AddI(VI a, VI b) { return _mm256_add_epi32(a, b); }
VI Srli16(VI a, int n) { return _mm256_srli_epi16(a, n); }
// Pairs of u8*s8 products fit int16 here: |w| <= 63 for the 4/6-bit kinds.
VI DotU8(VI acc, VI w, VI x) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
}
VI DotQ8(VI acc, VI w, VI x) {
  VI p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}
int HSumI(VI a) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}
void StoreI8(int8_t* p, VI v) {
  __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packs_epi16(w16, w16));
}

VF ZeroF() { return _mm256_setzero_ps(); }
VF Set1F(float v) { return _mm256_set1_ps(v); }
VF LoadF(const float* p) { return _mm256_loadu_ps(p); }
VF Mul(VF a, VF b) { return _mm256_mul_ps(a, b); }
VF MaxF(VF a, VF b) { return _mm256_max_ps(a, b); }
VF AbsF(VF a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
VF Fmadd(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
VF Fnmadd(VF a, VF b, VF c) { return _mm256_fnmadd_ps(a, b, c); }
VF CvtF(VI a) { return _mm256_cvtepi32_ps(a); }
VI CvtRoundI(VF a) { return _mm256_cvtps_epi32(a); }
float HSumF(VF a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
// The four sums of a, b, c, d at out[0..3]; each vector's lanes are added
// in the same order whichever slot it takes.
void HSum4F(VF a, VF b, VF c, VF d, float* out) {
  const VF ab = _mm256_hadd_ps(a, b), cd = _mm256_hadd_ps(c, d);
  const VF abcd = _mm256_hadd_ps(ab, cd);
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}
float HMaxF(VF a) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
VF LoadHalfF(const void* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}
VF LoadBF16F(const void* p) {
  VI v = _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
VF LoadU8F(const void* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p))));
}
VF LoadS8F(const void* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p))));
}
void StoreF(float* p, VF v, int n) {
  if (n == kP) {
    _mm256_storeu_ps(p, v);
  } else {
    VI mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(p, mask, v);
  }
}
void StoreHalf(uint16_t* p, VF v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

VI XorI(VI a, VI b) { return _mm256_xor_si256(a, b); }
VI Srli32(VI a, int n) { return _mm256_srli_epi32(a, n); }
VI GatherI(const void* base, VI offsets) {
  return _mm256_i32gather_epi32(static_cast<const int*>(base), offsets, 1);
}
// Low 16 bits of each lane as a half.
VF HalfLoF(VI v) {
  VI lo = _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF));
  return _mm256_cvtph_ps(
      _mm_packus_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1)));
}

VI OrI(VI a, VI b) { return _mm256_or_si256(a, b); }
VI Slli32(VI a, int n) { return _mm256_slli_epi32(a, n); }
// The 16 bytes at p in every 128-bit lane; bytes of `table` picked by idx (0..15).
VI Broadcast16I(const void* p) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}
VI ShuffleI8(VI table, VI idx) { return _mm256_shuffle_epi8(table, idx); }
VI LoadU8I(const void* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p)));
}
// 16 E4M3 codes as floats times 2^-120 (kFp8Unit undoes it): each code
// sign-extended to 32 bits and shifted left 20 puts its exponent and mantissa
// bits where f32's are (same bits, bias 127 instead of 7, subnormals to f32
// subnormals) once the sign-extension copies between sign and exponent are
// masked. Three integer operations per 8 codes and no conversion unit: the
// f16 route (shift into f16 bits, vcvtph2ps) ran this kernel at 0.7x the
// speed on this AMD core. E4M3 subnormals become f32 subnormals, which some
// Intel cores multiply through a microcode assist; they are 0.002% of the
// real models' fp8 weights (a few thousand a token), so that costs ~1%.
constexpr float kFp8Unit = 0x1p120f;
void LoadFP8x2F(const uint8_t* p, VF* lo, VF* hi) {
  const __m256i m = _mm256_set1_epi32(static_cast<int32_t>(0x87F00000u));
  const __m256i a = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m256i b = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8)));
  *lo = _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(a, 20), m));
  *hi = _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(b, 20), m));
}

// Tokens per register tile: NT int + NT float accumulators must fit the
// register file with room for the weights.
#define BRISK_TILE_TOKENS 6
#include "tensor/vec_ops.inc"

// After vec_ops.inc: the table at its end names those functions.
#include "tensor/matmul_tiles.inc"

}  // namespace

const KernelTable* GetAvx2Table() { return &kTable; }

}  // namespace brisk
