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
struct BlockQ8_K {  // 256 elements: x = d * q; bsums[j] = sum of qs[16j..16j+16)
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ8_0) == 34 &&
                  sizeof(BlockQ8_1) == 36 && sizeof(BlockQ4_K) == 144 && sizeof(BlockQ6_K) == 210 &&
                  sizeof(BlockQ8_K) == 292,
              "GGUF block layout");

}  // namespace brisk
