// Brisk's reference dequantizers against the `gguf` Python package's numpy
// dequantizer, bitwise, on random blocks of every quantized weight format
// (tests/fixtures/quant_dequant.bin, made by tests/make_quant_fixtures.py).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "tensor/format_traits.h"

namespace brisk {
namespace {

const char kFixture[] = BRISK_SOURCE_DIR "/tests/fixtures/quant_dequant.bin";

struct Record {
  uint32_t type = 0, blocks = 0, block_bytes = 0, block_size = 0;
  std::vector<uint8_t> data;
  std::vector<float> values;  // numpy's
};

// Parses the fixture; false (with a test failure) if it is malformed.
bool ReadFixture(std::vector<Record>* out) {
  std::ifstream in(kFixture, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  size_t pos = 0;
  auto u32 = [&](uint32_t* v) {
    if (pos + 4 > bytes.size()) return false;
    std::memcpy(v, bytes.data() + pos, 4);
    pos += 4;
    return true;
  };
  uint32_t magic = 0, version = 0, count = 0;
  if (!u32(&magic) || std::memcmp(&magic, "BQDQ", 4) != 0 || !u32(&version) || version != 1 ||
      !u32(&count)) {
    ADD_FAILURE() << "bad fixture header: " << kFixture;
    return false;
  }
  for (uint32_t i = 0; i < count; ++i) {
    Record r;
    if (!u32(&r.type) || !u32(&r.blocks) || !u32(&r.block_bytes) || !u32(&r.block_size)) break;
    const size_t nb = size_t{r.blocks} * r.block_bytes, nv = size_t{r.blocks} * r.block_size;
    if (pos + nb + 4 * nv > bytes.size()) break;
    r.data.assign(bytes.begin() + pos, bytes.begin() + pos + nb);
    r.values.resize(nv);
    std::memcpy(r.values.data(), bytes.data() + pos + nb, 4 * nv);
    pos += nb + 4 * nv;
    out->push_back(std::move(r));
  }
  if (out->size() != count || pos != bytes.size()) {
    ADD_FAILURE() << "truncated or oversized fixture: " << kFixture;
    return false;
  }
  return true;
}

TEST(QuantNumpy, DequantizeBitwiseEqualsGgufPackage) {
  std::vector<Record> records;
  ASSERT_TRUE(ReadFixture(&records));
  std::set<uint32_t> covered;
  for (const Record& r : records) {
    const FormatTraits* f = FindFormat(r.type);
    ASSERT_NE(f, nullptr) << "type " << r.type;
    SCOPED_TRACE(f->name);
    ASSERT_EQ(f->block_bytes, static_cast<int>(r.block_bytes));
    ASSERT_EQ(f->block_size, static_cast<int>(r.block_size));
    ASSERT_NE(f->dequantize, nullptr);
    std::vector<float> y(r.values.size(), -1.0f);
    f->dequantize(r.data.data(), y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < y.size(); ++i) {
      uint32_t a, b;
      std::memcpy(&a, &y[i], 4);
      std::memcpy(&b, &r.values[i], 4);
      ASSERT_EQ(a, b) << "element " << i << " (block " << i / r.block_size << "): brisk " << y[i]
                      << ", numpy " << r.values[i];
    }
    covered.insert(r.type);
  }
  // Every quantized ggml weight format has blocks in the fixture (FP8_E4M3 is
  // Brisk's own: fp8_test.cc and format_traits_test.cc check it).
  for (const FormatTraits& f : AllFormats()) {
    if (f.kernel_slot >= 0 && f.block_size > 1 && f.type != DType::kFP8_E4M3) {
      EXPECT_TRUE(covered.count(static_cast<uint32_t>(f.type))) << f.name << " not in the fixture";
    }
  }
}

}  // namespace
}  // namespace brisk
