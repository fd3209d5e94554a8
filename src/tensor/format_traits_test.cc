// Walks the format traits table: every entry's geometry and reference
// conversions are consistent, and for every weight format every compiled
// ISA variant's dot product (MatMul) matches the scalar reference on random
// data with odd sizes. A new format is covered by adding its entry.
#include "tensor/format_traits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tensor/kernel_table.h"
#include "tensor/kernels.h"

namespace brisk {
namespace {

// n floats, normal, with a different magnitude every 32 elements (so blocks
// and sub-blocks get different scales).
std::vector<float> RandomRow(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> mag(0.05f, 2.0f);
  std::vector<float> v(n);
  float m = 1;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 32 == 0) m = mag(rng);
    v[i] = m * g(rng);
  }
  return v;
}

TEST(FormatTraits, TableIsConsistent) {
  std::set<uint32_t> ids;
  std::set<std::string> names;
  std::set<int> slots;
  const std::string weight_names = MatMulWeightTypeNames();
  for (const FormatTraits& f : AllFormats()) {
    SCOPED_TRACE(f.name);
    const auto id = static_cast<uint32_t>(f.type);
    EXPECT_TRUE(ids.insert(id).second);
    EXPECT_TRUE(names.insert(f.name).second);
    EXPECT_EQ(FindFormat(id), &f);
    EXPECT_EQ(&FormatOf(f.type), &f);
    EXPECT_STREQ(DTypeName(f.type), f.name);
    ASSERT_GT(f.block_size, 0);
    ASSERT_GT(f.block_bytes, 0);
    EXPECT_EQ(RowBytes(f.type, 0), 0);
    EXPECT_EQ(RowBytes(f.type, 3 * f.block_size), 3 * f.block_bytes);
    if (f.block_size > 1) {
      EXPECT_EQ(RowBytes(f.type, f.block_size + 1), -1);
    }
    EXPECT_EQ(f.quantize == nullptr, f.dequantize == nullptr);
    EXPECT_EQ(IsMatMulWeightType(f.type), f.kernel_slot >= 0);
    if (f.kernel_slot < 0) {
      EXPECT_EQ(f.act_group, 0);
      continue;
    }
    // A weight format: a kernel slot of its own, reference conversions, and an
    // activation format whose blocks tile its own.
    EXPECT_LT(f.kernel_slot, kNumWeightKinds);
    EXPECT_TRUE(slots.insert(f.kernel_slot).second);
    EXPECT_NE(weight_names.find(f.name), std::string::npos);
    EXPECT_NE(f.quantize, nullptr);
    const FormatTraits* act = FindFormat(static_cast<uint32_t>(f.vec_dot_type));
    ASSERT_NE(act, nullptr);
    EXPECT_NE(act->dequantize, nullptr);
    EXPECT_EQ(f.block_size % act->block_size, 0);
    if (f.act_group == 0) {  // float weights: float activations
      // (FP8_E4M3's blocks of 32 carry the channel's scale; kernels decode them to f32.)
      EXPECT_EQ(f.block_size, f.type == DType::kFP8_E4M3 ? 32 : 1);
      EXPECT_EQ(f.vec_dot_type, DType::kF32);
      EXPECT_EQ(f.act_zero_point, 0);
    } else {  // quantized: int8 groups that tile the block and the activation block
      EXPECT_GT(f.block_size, 1);
      EXPECT_EQ(f.block_size % f.act_group, 0);
      EXPECT_EQ(act->block_size % f.act_group, 0);
      EXPECT_GE(f.act_zero_point, 0);
    }
  }
  EXPECT_EQ(static_cast<int>(slots.size()), static_cast<int>(kNumWeightKinds));
  EXPECT_EQ(FindFormat(4), nullptr);  // retired Q4_2
  EXPECT_EQ(FindFormat(1000), nullptr);
  EXPECT_STREQ(DTypeName(static_cast<DType>(4)), "unknown");
}

// How far the reference quantizers may land from the input, as a fraction of
// the block's absmax: about half a step of a sub-block spanning that absmax
// (Q2_K has 3 steps per sub-block, Q3_K 7).
float RoundTripTolerance(DType t) {
  switch (t) {
    case DType::kQ2_K: return 0.4f;
    case DType::kQ3_K: return 0.25f;
    default: return 0.15f;
  }
}

// Reference quantize writes exactly RowBytes and dequantize returns values
// near the input (loosely: a scrambled layout would be far off).
TEST(FormatTraits, ReferenceConversionsRoundTrip) {
  std::mt19937 rng(11);
  for (const FormatTraits& f : AllFormats()) {
    if (f.quantize == nullptr) continue;
    SCOPED_TRACE(f.name);
    const int64_t n = f.block_size == 1 ? 37 : 3 * f.block_size;
    const auto x = RandomRow(n, rng);
    const int64_t bytes = RowBytes(f.type, n);
    std::vector<uint8_t> buf(bytes + 64, 0xA5);
    f.quantize(x.data(), buf.data(), n);
    for (int64_t i = bytes; i < bytes + 64; ++i) ASSERT_EQ(buf[i], 0xA5) << "wrote past the row";
    std::vector<float> y(n);
    f.dequantize(buf.data(), y.data(), n);
    for (int64_t b = 0; b < n; b += f.block_size) {
      float amax = 0;
      for (int64_t i = b; i < b + f.block_size; ++i) amax = std::fmax(amax, std::fabs(x[i]));
      for (int64_t i = b; i < b + f.block_size; ++i)
        ASSERT_NEAR(x[i], y[i], RoundTripTolerance(f.type) * amax + 1e-6f) << "element " << i;
    }
  }
}

// Each ISA's kernels for every weight format against the scalar table:
// GGUF rows and (where the ISA repacks) packed panels, odd row and token
// counts, one and several blocks (floats: odd k).
TEST(FormatTraits, EveryIsaMatchesScalarForEveryWeightFormat) {
  std::mt19937 rng(12);
  ThreadPool pool(2);
  MatMulScratch scratch;
  const KernelTable& ref = *GetScalarTable();
  for (const FormatTraits& f : AllFormats()) {
    if (f.kernel_slot < 0) continue;
    for (const KernelTable* table : AvailableKernelTables()) {
      const FormatKernels& fk = table->formats[f.kernel_slot];
      ASSERT_NE(fk.matmul, nullptr) << table->name << " " << f.name;
      const bool packs = fk.panel_bytes != nullptr;
      EXPECT_EQ(packs, fk.pack_panel != nullptr) << table->name << " " << f.name;
      EXPECT_EQ(packs, fk.matmul_packed != nullptr) << table->name << " " << f.name;
    }
    for (int64_t rows : {1, 7, 37}) {
      for (int64_t blocks : {1, 3}) {
        for (int64_t n_tok : {1, 3, 13}) {
          const int64_t k = blocks * (f.block_size == 1 ? 37 : f.block_size);
          const int64_t rb = RowBytes(f.type, k);
          std::vector<uint8_t> w(rows * rb);
          std::vector<float> wf(rows * k);
          for (int64_t r = 0; r < rows; ++r) {
            const auto row = RandomRow(k, rng);
            f.quantize(row.data(), w.data() + r * rb, k);
            f.dequantize(w.data() + r * rb, wf.data() + r * k, k);
          }
          const auto x = RandomRow(k * n_tok, rng);
          std::vector<float> y_ref(rows * n_tok, -1.f);
          MatMulWith(ref, f.type, w.data(), rows, k, x.data(), k, n_tok, y_ref.data(), rows, pool,
                     scratch);
          for (const KernelTable* table : AvailableKernelTables()) {
            for (bool repack : {false, true}) {
              std::vector<float> y(rows * n_tok, -1.f);
              if (repack) {
                auto mw = PrepareMatMulWeightFor(*table, f.type, w.data(), rows, k);
                ASSERT_TRUE(mw.ok()) << mw.status().ToString();
                MatMulWith(*table, *mw, x.data(), k, n_tok, y.data(), rows, pool, scratch);
              } else {
                MatMulWith(*table, f.type, w.data(), rows, k, x.data(), k, n_tok, y.data(), rows,
                           pool, scratch);
              }
              for (int64_t t = 0; t < n_tok; ++t) {
                for (int64_t r = 0; r < rows; ++r) {
                  double mag = 0;  // sum |w*x|: the scale of summation-order differences
                  for (int64_t i = 0; i < k; ++i)
                    mag += std::fabs(double{wf[r * k + i]} * x[t * k + i]);
                  const int64_t i = t * rows + r;
                  ASSERT_NEAR(y[i], y_ref[i], 2e-5 * mag + 1e-6)
                      << table->name << " " << f.name << (repack ? " packed" : " raw")
                      << " rows=" << rows << " k=" << k << " n=" << n_tok << " t=" << t
                      << " r=" << r;
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace brisk
