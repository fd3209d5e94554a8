// FP8 E4M3 conversions against ml_dtypes' float8_e4m3fn, bitwise
// (tests/fixtures/fp8_e4m3.bin, made by tests/make_fp8_fixture.py): every
// code decoded, and encodings of ties, neighbours of ties, subnormals,
// zeros, NaN, saturation past 448 and random values.
#include "tensor/fp8.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace brisk {
namespace {

const char kFixture[] = BRISK_SOURCE_DIR "/tests/fixtures/fp8_e4m3.bin";

struct Fixture {
  std::vector<float> decoded;  // 256
  std::vector<std::pair<float, uint8_t>> encoded;
};

bool Read(Fixture* f) {
  std::ifstream in(kFixture, std::ios::binary);
  const std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  auto take = [&](void* out, size_t n) {
    if (pos + n > b.size()) return false;
    std::memcpy(out, b.data() + pos, n);
    pos += n;
    return true;
  };
  char magic[4];
  uint32_t version = 0, n = 0;
  if (!take(magic, 4) || std::memcmp(magic, "BFP8", 4) != 0 || !take(&version, 4) || version != 1)
    return false;
  f->decoded.resize(256);
  if (!take(f->decoded.data(), 256 * sizeof(float)) || !take(&n, 4)) return false;
  for (uint32_t i = 0; i < n; ++i) {
    float x = 0;
    uint8_t rec[4];
    if (!take(&x, 4) || !take(rec, 4)) return false;
    f->encoded.emplace_back(x, rec[0]);
  }
  return pos == b.size();
}

TEST(Fp8E4M3, DecodesEveryCodeAsMlDtypes) {
  Fixture f;
  ASSERT_TRUE(Read(&f)) << kFixture;
  for (int c = 0; c < 256; ++c) {
    const float want = f.decoded[c], got = E4M3ToFloat(static_cast<uint8_t>(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
      EXPECT_TRUE((c & 0x7F) == 0x7F) << c;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << c;
    }
  }
}

TEST(Fp8E4M3, EncodesAsMlDtypesWithSaturation) {
  Fixture f;
  ASSERT_TRUE(Read(&f)) << kFixture;
  ASSERT_GT(f.encoded.size(), 9000u);
  int mismatches = 0;
  for (const auto& [x, want] : f.encoded) {
    const uint8_t got = FloatToE4M3(x);
    if (got != want && ++mismatches <= 10)
      ADD_FAILURE() << "x=" << x << " (0x" << std::hex << std::bit_cast<uint32_t>(x) << ") got 0x"
                    << int(got) << " want 0x" << int(want);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Fp8E4M3, RoundTripsEveryFiniteCode) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // NaN
    EXPECT_EQ(FloatToE4M3(E4M3ToFloat(static_cast<uint8_t>(c))), c) << c;
  }
  EXPECT_EQ(FloatToE4M3(1e9f), 0x7E);
  EXPECT_EQ(FloatToE4M3(-INFINITY), 0xFE);
  EXPECT_EQ(E4M3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(E4M3ToFloat(0x01), std::ldexp(1.0f, -9));
}

}  // namespace
}  // namespace brisk
