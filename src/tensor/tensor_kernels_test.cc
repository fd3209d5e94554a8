// Every kernel variant against the scalar reference and against a double-
// precision dequantized reference, on random valid blocks with odd shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tensor/float16.h"
#include "tensor/format_traits.h"
#include "tensor/kernel_table.h"
#include "tensor/kernels.h"

namespace brisk {
namespace {

uint16_t H(float f) { return FloatToHalf(f); }

// Random bytes of a [rows x k] matrix of type t whose blocks are valid: scale
// fields are finite halves of moderate size, quants are random. Formats not
// listed here: random floats through the format's reference quantizer.
std::vector<uint8_t> RandomWeights(DType t, int64_t rows, int64_t k, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t rb = RowBytes(t, k);
  std::vector<uint8_t> w(rows * rb);
  std::vector<float> f(k);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  auto put16 = [&](uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); };
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = w.data() + r * rb;
    switch (t) {
      case DType::kF32:
        for (int64_t i = 0; i < k; ++i) {
          float f = u(rng);
          std::memcpy(row + 4 * i, &f, 4);
        }
        break;
      case DType::kF16:
        for (int64_t i = 0; i < k; ++i) put16(row + 2 * i, H(u(rng)));
        break;
      case DType::kBF16:
        for (int64_t i = 0; i < k; ++i) put16(row + 2 * i, FloatToBF16(u(rng)));
        break;
      case DType::kQ4_0:
      case DType::kQ8_0:
        for (int64_t b = 0; b < k / 32; ++b)
          put16(row + b * (rb * 32 / k), H(0.01f + 0.05f * u(rng)));
        break;
      case DType::kQ4_1:
        for (int64_t b = 0; b < k / 32; ++b) {
          put16(row + b * 20, H(0.01f + 0.05f * u(rng)));
          put16(row + b * 20 + 2, H(0.3f * u(rng)));
        }
        break;
      case DType::kQ4_K:
        for (int64_t b = 0; b < k / 256; ++b) {
          put16(row + b * 144, H(0.002f + 0.003f * u(rng)));
          put16(row + b * 144 + 2, H(0.003f * u(rng) + 0.003f));
        }
        break;
      case DType::kQ6_K:
        for (int64_t b = 0; b < k / 256; ++b)
          put16(row + b * 210 + 208, H(0.001f + 0.002f * u(rng)));
        break;
      case DType::kQ5_0:  // d first
      case DType::kIQ4_NL:
        for (int64_t b = 0; b < k / 32; ++b)
          put16(row + b * (rb * 32 / k), H(0.01f + 0.05f * u(rng)));
        break;
      case DType::kQ5_1:
        for (int64_t b = 0; b < k / 32; ++b) {
          put16(row + b * 24, H(0.01f + 0.05f * u(rng)));
          put16(row + b * 24 + 2, H(0.3f * u(rng)));
        }
        break;
      case DType::kQ5_K:
        for (int64_t b = 0; b < k / 256; ++b) {
          put16(row + b * 176, H(0.002f + 0.003f * u(rng)));
          put16(row + b * 176 + 2, H(0.003f * u(rng) + 0.003f));
        }
        break;
      case DType::kQ2_K:
        for (int64_t b = 0; b < k / 256; ++b) {
          put16(row + b * 84 + 80, H(0.01f + 0.02f * u(rng)));
          put16(row + b * 84 + 82, H(0.01f * u(rng) + 0.01f));
        }
        break;
      case DType::kQ3_K:
        for (int64_t b = 0; b < k / 256; ++b)
          put16(row + b * 110 + 108, H(0.002f + 0.003f * u(rng)));
        break;
      case DType::kIQ4_XS:
        for (int64_t b = 0; b < k / 256; ++b) put16(row + b * 136, H(0.0005f + 0.001f * u(rng)));
        break;
      default:
        for (auto& v : f) v = u(rng);
        QuantizeRow(t, f.data(), row, k);
        break;
    }
  }
  return w;
}

std::vector<float> RandomFloats(int64_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> g(0.0f, scale);
  std::vector<float> v(n);
  for (auto& f : v) f = g(rng);
  return v;
}

// ---- Scalar conversions and known answers ---------------------------------------

TEST(Half, KnownValuesAndRoundTrip) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7C00);
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3C00);  // tie: round to even
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3C02);
  EXPECT_FLOAT_EQ(HalfToFloat(0x0001), 5.9604645e-8f);
  EXPECT_FLOAT_EQ(HalfToFloat(0x3555), 0.33325195f);
  for (uint32_t h = 0; h < 65536; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;  // nan
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << h;
  }
  EXPECT_EQ(FloatToBF16(1.0f), 0x3F80);
  EXPECT_FLOAT_EQ(BF16ToFloat(0xC040), -3.0f);
}

TEST(Dequantize, KnownAnswers) {
  float out[256];
  BlockQ4_0 q40{};
  q40.d = H(0.5f);
  q40.qs[0] = 0x3A;  // element 0 = 10-8 = 2, element 16 = 3-8 = -5
  DequantizeRow(DType::kQ4_0, &q40, out, 32);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[16], -2.5f);
  EXPECT_FLOAT_EQ(out[1], -4.0f);

  BlockQ4_1 q41{};
  q41.d = H(0.25f);
  q41.m = H(-1.0f);
  q41.qs[3] = 0xF1;
  DequantizeRow(DType::kQ4_1, &q41, out, 32);
  EXPECT_FLOAT_EQ(out[3], -0.75f);
  EXPECT_FLOAT_EQ(out[19], 2.75f);
  EXPECT_FLOAT_EQ(out[0], -1.0f);

  BlockQ8_0 q80{};
  q80.d = H(0.125f);
  q80.qs[31] = -100;
  DequantizeRow(DType::kQ8_0, &q80, out, 32);
  EXPECT_FLOAT_EQ(out[31], -12.5f);

  BlockQ4_K q4k{};
  q4k.d = H(2.0f);
  q4k.dmin = H(0.5f);
  q4k.scales[1] = 3;      // sub-block 1: scale 3
  q4k.scales[5] = 4;      // sub-block 1: min 4
  q4k.scales[10] = 0x52;  // sub-block 6: scale low 2, min low 5
  q4k.scales[2] = 0x40;   // sub-block 6: scale high bits 1 -> 2 | 16 = 18
  q4k.scales[6] = 0x80;   // sub-block 6: min high bits 2 -> 5 | 32 = 37
  q4k.qs[5] = 0x70;       // element 5 (sub-block 0) = 0, element 37 (sub-block 1) = 7
  q4k.qs[96 + 2] = 0x09;  // element 192 + 2 (sub-block 6) = 9
  DequantizeRow(DType::kQ4_K, &q4k, out, 256);
  EXPECT_FLOAT_EQ(out[37], 2.0f * 3 * 7 - 0.5f * 4);
  EXPECT_FLOAT_EQ(out[194], 2.0f * 18 * 9 - 0.5f * 37);
  EXPECT_FLOAT_EQ(out[5], 0.0f);

  BlockQ6_K q6k{};
  q6k.d = H(0.5f);
  for (int i = 0; i < 16; ++i) q6k.scales[i] = static_cast<int8_t>(i - 8);
  // Element 128 + 64 + 17: h=1, quarter 2 (high nibble of ql[64+17]), qh bits 4-5
  // of qh[32+17], scale index 8 + 1 + 4 = 13.
  q6k.ql[64 + 17] = 0xA0;
  q6k.qh[32 + 17] = 0x30;
  DequantizeRow(DType::kQ6_K, &q6k, out, 256);
  EXPECT_FLOAT_EQ(out[128 + 64 + 17], 0.5f * (13 - 8) * ((0xA | 3 << 4) - 32));
  EXPECT_FLOAT_EQ(out[0], 0.5f * (0 - 8) * -32);

  uint16_t f16[2] = {H(1.5f), H(-0.25f)};
  DequantizeRow(DType::kF16, f16, out, 2);
  EXPECT_FLOAT_EQ(out[1], -0.25f);
}

TEST(Quantize, RoundTripErrors) {
  std::mt19937 rng(1);
  std::vector<float> x = RandomFloats(512, rng), y(512);
  struct Case {
    DType t;
    float tol;  // max error as a fraction of the block's absolute max
  } cases[] = {{DType::kQ8_0, 0.006f}, {DType::kQ8_1, 0.006f}, {DType::kQ8_K, 0.005f},
               {DType::kQ4_0, 0.13f},  {DType::kQ4_1, 0.07f},  {DType::kQ4_K, 0.08f},
               {DType::kQ6_K, 0.025f}, {DType::kF16, 0.001f},  {DType::kBF16, 0.005f},
               {DType::kQ5_0, 0.07f},  {DType::kQ5_1, 0.04f},  {DType::kQ5_K, 0.04f},
               {DType::kQ3_K, 0.17f},  {DType::kQ2_K, 0.35f},  {DType::kIQ4_NL, 0.12f},
               {DType::kIQ4_XS, 0.12f}};
  for (const auto& c : cases) {
    std::vector<uint8_t> buf(RowBytes(c.t, 512));
    QuantizeRow(c.t, x.data(), buf.data(), 512);
    DequantizeRow(c.t, buf.data(), y.data(), 512);
    float amax = 0;
    for (float v : x) amax = std::fmax(amax, std::fabs(v));
    for (int i = 0; i < 512; ++i) ASSERT_NEAR(x[i], y[i], c.tol * amax) << DTypeName(c.t) << i;
  }
  // Q8_1's s and Q8_K's bsums agree with the quants.
  std::vector<uint8_t> buf(RowBytes(DType::kQ8_1, 512));
  QuantizeRow(DType::kQ8_1, x.data(), buf.data(), 512);
  const auto* b = reinterpret_cast<const BlockQ8_1*>(buf.data());
  int sum = 0;
  for (int j = 0; j < 32; ++j) sum += b[3].qs[j];
  EXPECT_NEAR(HalfToFloat(b[3].s), HalfToFloat(b[3].d) * sum, 0.01f);
  buf.assign(RowBytes(DType::kQ8_K, 512), 0);
  QuantizeRow(DType::kQ8_K, x.data(), buf.data(), 512);
  const auto* k8 = reinterpret_cast<const BlockQ8_K*>(buf.data());
  sum = 0;
  for (int j = 0; j < 16; ++j) sum += k8[1].qs[16 * 5 + j];
  EXPECT_EQ(k8[1].bsums[5], sum);
}

// ---- Variants -------------------------------------------------------------------

TEST(Variants, ScalarFirstAndActiveListed) {
  auto tables = AvailableKernelTables();
  ASSERT_FALSE(tables.empty());
  EXPECT_STREQ(KernelTableName(*tables[0]), "scalar");
  bool found = false;
  for (auto* t : tables) found |= std::string(KernelTableName(*t)) == ActiveKernelVariant();
  EXPECT_TRUE(found) << ActiveKernelVariant();
}

TEST(Variants, QuantizeActsMatchScalar) {
  std::mt19937 rng(2);
  const KernelTable& ref = *GetScalarTable();
  for (const KernelTable* t : AvailableKernelTables()) {
    for (int group : {16, 32}) {
      for (int zp : {0, 8, 32, 128}) {
        const int n = 1536;
        auto x = RandomFloats(n, rng);
        x[5] = 0;
        for (int i = 64; i < 96; ++i) x[i] = 0;  // an all-zero group
        std::vector<int8_t> q1(n), q2(n);
        std::vector<float> d1(n / group), d2(n / group);
        std::vector<int32_t> a1(n / group), a2(n / group);
        ref.quantize_acts(x.data(), n, group, zp, q1.data(), d1.data(), a1.data());
        t->quantize_acts(x.data(), n, group, zp, q2.data(), d2.data(), a2.data());
        ASSERT_EQ(q1, q2) << t->name;
        ASSERT_EQ(d1, d2) << t->name;
        if (zp != 0) {
          ASSERT_EQ(a1, a2) << t->name;
        } else {
          for (int g = 0; g < n / group; ++g) {
            float f1, f2;
            std::memcpy(&f1, &a1[g], 4);
            std::memcpy(&f2, &a2[g], 4);
            ASSERT_NEAR(f1, f2, 1e-5f * std::fabs(f1) + 1e-7f) << t->name;
          }
        }
      }
    }
  }
}

TEST(Variants, F32ToF16MatchesScalar) {
  std::mt19937 rng(3);
  const KernelTable& ref = *GetScalarTable();
  for (const KernelTable* t : AvailableKernelTables()) {
    for (int n : {1, 7, 16, 31, 64, 100, 257}) {
      auto a = RandomFloats(n, rng);
      std::vector<uint16_t> h1(n), h2(n);
      ref.f32_to_f16(a.data(), h1.data(), n);
      t->f32_to_f16(a.data(), h2.data(), n);
      ASSERT_EQ(h1, h2) << t->name << " n=" << n;
      for (int i = 0; i < n; ++i) ASSERT_EQ(h1[i], FloatToHalf(a[i]));
    }
  }
}

// Every weight format with matmul kernels, as the traits table lists them.
std::vector<DType> WeightTypes() {
  std::vector<DType> out;
  for (const FormatTraits& f : AllFormats())
    if (f.kernel_slot >= 0) out.push_back(f.type);
  return out;
}

int BlockSize(DType t) { return FormatOf(t).block_size; }
// Double-precision reference on dequantized weights. `mag` = sum |w*x|;
// `qerr` bounds the effect of 8-bit activation quantization (x error <= amax/254
// per group of 32, or 16 for Q6_K).
void Reference(DType t, const std::vector<uint8_t>& w, int64_t rows, int64_t k,
               const std::vector<float>& x, int64_t n_tok, std::vector<double>* y,
               std::vector<double>* mag, std::vector<double>* qerr) {
  const int64_t rb = RowBytes(t, k);
  const int G = FormatOf(t).act_group;
  const bool quant = G > 0;
  std::vector<float> wr(k);
  y->assign(rows * n_tok, 0);
  mag->assign(rows * n_tok, 0);
  qerr->assign(rows * n_tok, 0);
  for (int64_t r = 0; r < rows; ++r) {
    DequantizeRow(t, w.data() + r * rb, wr.data(), k);
    for (int64_t n = 0; n < n_tok; ++n) {
      const float* xt = x.data() + n * k;
      double acc = 0, m = 0, e = 0;
      for (int64_t i = 0; i < k; ++i) {
        acc += static_cast<double>(wr[i]) * xt[i];
        m += std::fabs(static_cast<double>(wr[i]) * xt[i]);
      }
      if (quant) {
        for (int64_t g = 0; g < k / G; ++g) {
          double amax = 0, wsum = 0;
          for (int i = 0; i < G; ++i) {
            amax = std::fmax(amax, std::fabs(xt[g * G + i]));
            wsum += std::fabs(wr[g * G + i]);
          }
          e += amax / 254.0 * wsum;
        }
      }
      (*y)[n * rows + r] = acc;
      (*mag)[n * rows + r] = m;
      (*qerr)[n * rows + r] = e;
    }
  }
}

struct Shape {
  int64_t rows, blocks, n_tok;
};

void CheckMatMul(int threads, bool repack) {
  std::mt19937 rng(4);
  ThreadPool pool(threads);
  MatMulScratch scratch;
  const KernelTable& ref = *GetScalarTable();
  const Shape shapes[] = {{1, 1, 1},   {7, 2, 2},  {33, 3, 3},   {192, 2, 5},  {17, 1, 17},
                          {40, 2, 64}, {16, 1, 8}, {100, 1, 33}, {64, 1, 128}, {3, 4, 1}};
  for (DType t : WeightTypes()) {
    for (const Shape& s : shapes) {
      const int64_t k = s.blocks * (BlockSize(t) == 1 ? 32 : BlockSize(t));
      auto w = RandomWeights(t, s.rows, k, rng);
      auto x = RandomFloats(k * s.n_tok, rng);
      std::vector<double> yd, mag, qerr;
      Reference(t, w, s.rows, k, x, s.n_tok, &yd, &mag, &qerr);
      std::vector<float> y_ref(s.rows * s.n_tok, -1.0f);
      MatMulWith(ref, t, w.data(), s.rows, k, x.data(), k, s.n_tok, y_ref.data(), s.rows, pool,
                 scratch);
      for (const KernelTable* tab : AvailableKernelTables()) {
        std::vector<float> y(s.rows * s.n_tok, -1.0f);
        // Stale scratch must never leak into results: fill it with NaNs.
        std::memset(scratch.Reserve(1 << 22), 0xFF, 1 << 22);
        if (repack) {
          auto mw = PrepareMatMulWeightFor(*tab, t, w.data(), s.rows, k);
          ASSERT_TRUE(mw.ok()) << mw.status().ToString();
          MatMulWith(*tab, *mw, x.data(), k, s.n_tok, y.data(), s.rows, pool, scratch);
        } else {
          MatMulWith(*tab, t, w.data(), s.rows, k, x.data(), k, s.n_tok, y.data(), s.rows, pool,
                     scratch);
        }
        for (int64_t i = 0; i < s.rows * s.n_tok; ++i) {
          // Same quantized activations: only float summation order differs.
          ASSERT_NEAR(y[i], y_ref[i], 2e-5 * mag[i] + 1e-6)
              << tab->name << " " << DTypeName(t) << " rows=" << s.rows << " k=" << k
              << " n=" << s.n_tok << " i=" << i << " threads=" << threads;
          ASSERT_NEAR(y[i], yd[i], 1.01 * qerr[i] + 2e-5 * mag[i] + 1e-6)
              << tab->name << " " << DTypeName(t) << " vs double, i=" << i;
        }
      }
    }
  }
}

TEST(MatMul, AllVariantsOneThread) { CheckMatMul(1, false); }
TEST(MatMul, AllVariantsTwoThreads) { CheckMatMul(2, false); }
TEST(MatMul, RepackedOneThread) { CheckMatMul(1, true); }
TEST(MatMul, RepackedTwoThreads) { CheckMatMul(2, true); }

TEST(MatMul, StridedOutputAndPublicEntryPoints) {
  std::mt19937 rng(5);
  ThreadPool pool(2);
  MatMulScratch scratch;
  const int64_t rows = 48, k = 64, n = 3, ldy = 50, ldx = 70;
  auto w = RandomWeights(DType::kQ4_1, rows, k, rng);
  auto x = RandomFloats(ldx * n, rng);
  std::vector<float> y1(rows * n), y2(ldy * n, 123.0f), y3(rows * n);
  std::vector<float> xd(k * n);
  for (int t = 0; t < n; ++t) std::memcpy(&xd[t * k], &x[t * ldx], k * 4);
  auto raw = PrepareMatMulWeight(DType::kQ4_1, w.data(), rows, k, /*allow_repack=*/false);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->packed, nullptr);
  MatMul(*raw, xd.data(), n, y1.data(), pool, scratch);
  MatMul(*raw, x.data(), ldx, n, y2.data(), ldy, pool, scratch);
  auto mw = PrepareMatMulWeight(DType::kQ4_1, w.data(), rows, k);
  ASSERT_TRUE(mw.ok());
  MatMul(*mw, xd.data(), n, y3.data(), pool, scratch);
  for (int t = 0; t < n; ++t) {
    for (int r = 0; r < rows; ++r) {
      EXPECT_FLOAT_EQ(y1[t * rows + r], y2[t * ldy + r]);
      EXPECT_NEAR(y1[t * rows + r], y3[t * rows + r], 1e-4f);
    }
    EXPECT_EQ(y2[t * ldy + rows], 123.0f);  // untouched past `rows`
  }
  EXPECT_FALSE(PrepareMatMulWeight(DType::kQ4_1, w.data(), rows, 33).ok());
  EXPECT_FALSE(PrepareMatMulWeight(DType::kQ8_K, w.data(), rows, 256).ok());
}

// Fused matmuls (q/k/v, gate/up) give bitwise what one call per weight
// gives, packed or not, with odd row counts, and with mixed types (fallback).
TEST(MatMul, FusedEqualsSeparateCalls) {
  std::mt19937 rng(9);
  ThreadPool pool(2);
  MatMulScratch scratch;
  const int64_t k = 128;
  for (bool repack : {true, false}) {
    for (int64_t n : {1, 5, 40}) {
      for (DType second : {DType::kQ4_1, DType::kQ8_0}) {
        const int64_t rows[] = {72, 24, 37};
        const DType types[] = {DType::kQ4_1, second, DType::kQ4_1};
        std::vector<std::vector<uint8_t>> raw;
        std::vector<MatMulWeight> ws;
        for (int i = 0; i < 3; ++i) {
          raw.push_back(RandomWeights(types[i], rows[i], k, rng));
          auto w = PrepareMatMulWeight(types[i], raw.back().data(), rows[i], k, repack);
          ASSERT_TRUE(w.ok());
          ws.push_back(*w);
        }
        auto x = RandomFloats(k * n, rng);
        std::vector<std::vector<float>> fused(3), single(3);
        std::vector<MatMulOut> outs;
        for (int i = 0; i < 3; ++i) {
          fused[i].assign(rows[i] * n, -1.f);
          single[i].assign(rows[i] * n, -2.f);
          MatMul(ws[i], x.data(), n, single[i].data(), pool, scratch);
          outs.push_back({&ws[i], fused[i].data(), rows[i]});
        }
        MatMulFused(outs, x.data(), k, n, pool, scratch);
        for (int i = 0; i < 3; ++i)
          EXPECT_EQ(0, std::memcmp(fused[i].data(), single[i].data(), fused[i].size() * 4))
              << "weight " << i << " n=" << n << " repack=" << repack;
      }
    }
  }
}

// Float and FP8 weights: a token's outputs are bitwise the same whether it is
// alone in the step or one of many (a speculative verify step must give each
// position what a one-token step would); float weights give the same packed
// or from GGUF rows, for k that is not a multiple of the vector width too;
// and they match the scalar table.
TEST(MatMul, FloatOutputsDoNotDependOnTheBatch) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  MatMulScratch scratch;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kFP8_E4M3}) {
    const bool fp8 = t == DType::kFP8_E4M3;  // 32-value blocks; its GGUF-row kernel sums otherwise
    for (int64_t k : {int64_t{16}, int64_t{37}, int64_t{100}, int64_t{576}}) {
      if (fp8 && k % 32 != 0) continue;
      for (int64_t rows : {int64_t{1}, int64_t{5}, int64_t{67}}) {
        const int64_t n = 11;
        auto w = RandomWeights(t, rows, k, rng);
        auto x = RandomFloats(k * n, rng);
        std::vector<float> y_ref(rows * n);
        MatMulWith(*GetScalarTable(), t, w.data(), rows, k, x.data(), k, n, y_ref.data(), rows,
                   pool, scratch);
        for (const KernelTable* tab : AvailableKernelTables()) {
          auto mw = PrepareMatMulWeightFor(*tab, t, w.data(), rows, k);
          ASSERT_TRUE(mw.ok());
          std::vector<float> packed(rows * n), raw(rows * n);
          MatMulWith(*tab, *mw, x.data(), k, n, packed.data(), rows, pool, scratch);
          MatMulWith(*tab, t, w.data(), rows, k, x.data(), k, n, raw.data(), rows, pool, scratch);
          for (int64_t tok = 0; tok < n; ++tok) {
            std::vector<float> alone(rows);
            MatMulWith(*tab, *mw, x.data() + tok * k, k, 1, alone.data(), rows, pool, scratch);
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t i = tok * rows + r;
              const auto where = testing::Message()
                                 << tab->name << " " << DTypeName(t) << " k=" << k
                                 << " rows=" << rows << " token=" << tok << " row=" << r;
              ASSERT_EQ(packed[i], alone[r]) << where;
              if (!fp8) ASSERT_EQ(packed[i], raw[i]) << where;
              ASSERT_NEAR(packed[i], y_ref[i], 1e-4f * std::sqrt(static_cast<float>(k))) << where;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace brisk
