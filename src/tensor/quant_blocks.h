// GGUF quantized blocks as bytes in the file: packed, little-endian, f16
// fields are raw IEEE half bits. Each format's geometry (elements and bytes
// per block) is registered in tensor/format_traits.h; these structs are what
// its reference functions and kernels read. Plain structs only: included by
// the per-ISA kernel files (see kernel_table.h).
#pragma once

#include <cstdint>

namespace brisk {

struct BlockQ4_0 {  // 32 elements: x = d * (q - 8)
  uint16_t d;
  uint8_t qs[16];  // element j = low nibble of qs[j], element j+16 = high nibble
};
struct BlockQ4_1 {  // 32 elements: x = d * q + m
  uint16_t d, m;
  uint8_t qs[16];  // as Q4_0
};
struct BlockQ8_0 {  // 32 elements: x = d * q
  uint16_t d;
  int8_t qs[32];
};
struct BlockQ8_1 {  // 32 elements: x = d * q; s = d * sum(qs)
  uint16_t d, s;
  int8_t qs[32];
};
struct BlockQ4_K {  // 256 elements, 8 sub-blocks of 32: x = d*sc[j]*q - dmin*m[j]
  uint16_t d, dmin;
  uint8_t scales[12];  // 8 x (6-bit scale, 6-bit min), packed: sub-blocks 0-3 in the low
                       // 6 bits of bytes 0-3 (scale) and 4-7 (min); sub-blocks 4-7 in the
                       // nibbles of bytes 8-11 plus the top 2 bits of bytes 0-7
  uint8_t qs[128];     // 64-element chunk c: qs[32c..32c+32) low nibbles = sub-block 2c,
                       // high nibbles = sub-block 2c+1
};
struct BlockQ6_K {  // 256 elements, 16 sub-blocks of 16: x = d * scales[j] * (q - 32)
  uint8_t ql[128];  // low 4 bits of the 6-bit q
  uint8_t qh[64];   // high 2 bits
  int8_t scales[16];
  uint16_t d;
};
struct BlockQ5_0 {  // 32 elements: x = d * (q - 16), q = 5 bits
  uint16_t d;
  uint8_t qh[4];   // bit j of the little-endian u32 = bit 4 of element j
  uint8_t qs[16];  // low 4 bits, as Q4_0: element j = low nibble of qs[j], j+16 = high nibble
};
struct BlockQ5_1 {  // 32 elements: x = d * q + m, q = 5 bits
  uint16_t d, m;
  uint8_t qh[4];   // as Q5_0
  uint8_t qs[16];  // as Q5_0
};
struct BlockIQ4_NL {  // 32 elements: x = d * kIQ4NLValues[q], q = 4 bits
  uint16_t d;
  uint8_t qs[16];  // as Q4_0
};
// The 16 levels of IQ4_NL and IQ4_XS (a fixed non-uniform grid).
constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};

// 256 elements, 16 sub-blocks of 16: x = d*sc[j]*q - dmin*m[j], q = 2 bits.
struct BlockQ2_K {
  uint8_t scales[16];  // sub-block j: low nibble = sc[j], high nibble = m[j]
  uint8_t qs[64];      // element 128h + 32s + l: bits 2s..2s+1 of qs[32h + l]
  uint16_t d, dmin;
};
// 256 elements, 16 sub-blocks of 16: x = d * (sc[j] - 32) * (q - 4), q = 3 bits.
struct BlockQ3_K {
  uint8_t hmask[32];   // element 128h + 32s + l: bit 2 of q = bit 4h+s of hmask[l]
  uint8_t qs[64];      // element 128h + 32s + l: bits 0-1 of q = bits 2s..2s+1 of qs[32h + l]
  uint8_t scales[12];  // 16 x 6 bits: sub-block j's low 4 bits in byte j (j < 8) or the high
                       // nibble of byte j-8; its top 2 bits at bits 2(j/4) of byte 8 + j%4
  uint16_t d;
};
struct BlockQ5_K {  // 256 elements, 8 sub-blocks of 32: x = d*sc[j]*q - dmin*m[j], q = 5 bits
  uint16_t d, dmin;
  uint8_t scales[12];  // as Q4_K
  uint8_t qh[32];      // element 32j + l: bit 4 of q = bit j of qh[l]
  uint8_t qs[128];     // low 4 bits, as Q4_K
};
struct BlockIQ4_XS {  // 256 elements, 8 sub-blocks of 32: x = d * (ls[j] - 32) * kIQ4NLValues[q]
  uint16_t d;
  uint16_t scales_h;    // bits 2j..2j+1: the top 2 bits of ls[j] (6 bits)
  uint8_t scales_l[4];  // low 4 bits of ls[j]: low nibble of byte j/2 for even j, high for odd
  uint8_t qs[128];      // sub-block j: low nibbles of qs[16j..16j+16) = elements 0-15, high = 16-31
};
// Brisk's fp8 (not a ggml format): E4M3 codes (tensor/fp8.h) with one f16
// scale per output channel, repeated in each block so kernels read it where
// they read the codes.
struct BlockFP8 {  // 32 elements: x = d * E4M3ToFloat(q)
  uint16_t d;
  uint8_t q[32];
};
struct BlockQ8_K {  // 256 elements: x = d * q; bsums[j] = sum of qs[16j..16j+16)
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ8_0) == 34 &&
                  sizeof(BlockQ8_1) == 36 && sizeof(BlockQ4_K) == 144 && sizeof(BlockQ6_K) == 210 &&
                  sizeof(BlockQ8_K) == 292 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 &&
                  sizeof(BlockIQ4_NL) == 18 && sizeof(BlockQ2_K) == 84 &&
                  sizeof(BlockQ3_K) == 110 && sizeof(BlockQ5_K) == 176 &&
                  sizeof(BlockIQ4_XS) == 136,
              "GGUF block layout");

}  // namespace brisk
