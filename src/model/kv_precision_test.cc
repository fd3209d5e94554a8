// KV cache precisions (cache.kv_precision): what each stores, how much
// room it takes, and attention over it. Attention is checked twice: against
// a double-precision reference over the values the cache kept (LoadToken),
// which only float rounding separates from the kernel, and against the
// values before they were stored, which states each precision's error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "model/kv_cache.h"
#include "tensor/attention.h"
#include "tensor/cpu_features.h"

namespace brisk {
namespace {

constexpr KvType kAllTypes[] = {KvType::kF16, KvType::kF32, KvType::kBF16, KvType::kInt8,
                                KvType::kFP8};

TEST(KvPrecisionTest, NamesParseBothWays) {
  for (KvType t : kAllTypes) {
    auto parsed = ParseKvPrecision(KvPrecisionName(t));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(KvPrecisionNames().size(), std::size(kAllTypes));
  auto bad = ParseKvPrecision("int3");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fp8"), std::string::npos);  // lists the choices
}

// One-byte precisions hold twice the tokens of F16 in the same bytes, less
// their scales (one F16 per 64 values, for K and for V).
TEST(KvPrecisionTest, BlockBytes) {
  KvCacheShape s{/*n_layers=*/30, /*n_kv_heads=*/3, /*head_dim=*/64, /*block_size=*/16};
  const int64_t f16 = s.BytesPerBlock();
  EXPECT_EQ(f16, 30 * 2 * 16 * 192 * 2);
  s.type = KvType::kF32;
  EXPECT_EQ(s.BytesPerBlock(), 2 * f16);
  s.type = KvType::kBF16;
  EXPECT_EQ(s.BytesPerBlock(), f16);
  for (KvType t : {KvType::kInt8, KvType::kFP8}) {
    s.type = t;
    EXPECT_EQ(s.BytesPerBlock(), 30 * (2 * 16 * 192 + 2 * 3 * 16 * 2));
    // 512 MiB of int8 KV holds 1.94x the blocks of F16 at head_dim 64.
    const double ratio = double(KvCache::BlocksForBudget(s, 512 << 20)) /
                         KvCache::BlocksForBudget({30, 3, 64, 16}, 512 << 20);
    EXPECT_NEAR(ratio, 2.0 * 64 / 66, 0.01);
  }
  // Gemma 3 270M's shape: one KV head of 256 values has four scales.
  const KvCacheShape gemma{18, 1, 256, 16, KvType::kInt8};
  EXPECT_EQ(gemma.scales_per_slot(), 4);
  EXPECT_EQ(gemma.BytesPerBlock(), 18 * (2 * 16 * 256 + 2 * 4 * 16 * 2));
  // Head dims that 64 does not divide take the largest of 32 and 16 that does.
  EXPECT_EQ(KvScaleGroup(96), 32);
  EXPECT_EQ(KvScaleGroup(80), 16);
  EXPECT_EQ(KvScaleGroup(8), 8);
}

// The largest error a stored value may have, given the largest magnitude of
// its head's values (scaled types set their scale from it).
double Bound(KvType t, float x, float amax) {
  switch (t) {
    case KvType::kF32: return 0;
    case KvType::kF16: return std::fabs(x) * std::ldexp(1.0, -11) + 1e-7;
    case KvType::kBF16: return std::fabs(x) * std::ldexp(1.0, -8);
    case KvType::kInt8: return amax / 127 * 0.5 * 1.002;  // half a step (scale kept in F16)
    case KvType::kFP8:  // half an E4M3 ulp: 2^-4 relative, or 2^-10 of the scale when subnormal
      return std::max(std::fabs(x) * std::ldexp(1.0, -4), amax / 448 * std::ldexp(1.0, -10)) *
                 1.002 +
             1e-9;
  }
  return 0;
}

// Each group of 64 values has its own scale: an outlier in one group of a
// 256-value head leaves the other groups' steps set by their own values.
TEST(KvPrecisionTest, GroupsOfAHeadHaveTheirOwnScales) {
  for (KvType t : {KvType::kInt8, KvType::kFP8}) {
    KvCache kv({1, 2, 256, 16, t}, 1);
    const int32_t table[] = {0};
    std::vector<float> k(512), v(512), kb(512), vb(512);
    for (int e = 0; e < 512; ++e) k[e] = v[e] = 0.01f * static_cast<float>((e * 37) % 101 - 50);
    k[5] = v[300] = 1000.f;  // group 0 of head 0 (K), group 0 of head 1 (V)
    kv.StoreToken(0, table, 0, k.data(), v.data());
    kv.LoadToken(0, table, 0, kb.data(), vb.data());
    for (int e = 0; e < 512; ++e) {
      const bool k_outlier_group = e < 64, v_outlier_group = e >= 256 && e < 320;
      EXPECT_LE(std::fabs(kb[e] - k[e]), Bound(t, k[e], k_outlier_group ? 1000.f : 0.5f))
          << KvPrecisionName(t) << " K " << e;
      EXPECT_LE(std::fabs(vb[e] - v[e]), Bound(t, v[e], v_outlier_group ? 1000.f : 0.5f))
          << KvPrecisionName(t) << " V " << e;
    }
  }
}

TEST(KvPrecisionTest, StoredValuesWithinTheirBound) {
  const KvCacheShape base{/*n_layers=*/2, /*n_kv_heads=*/3, /*head_dim=*/32, /*block_size=*/16};
  const int32_t table[] = {2, 0};
  const int kv_dim = static_cast<int>(base.kv_dim());
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  for (KvType t : kAllTypes) {
    KvCacheShape shape = base;
    shape.type = t;
    KvCache kv(shape, 3);
    // Heads of very different magnitudes, one all zero, one with an outlier.
    std::vector<float> k(kv_dim), v(kv_dim), kb(kv_dim), vb(kv_dim);
    for (int p = 0; p < 20; ++p) {
      for (int e = 0; e < kv_dim; ++e) {
        const int h = e / base.head_dim;
        k[e] = h == 0 ? 0.f : nd(rng) * (h == 1 ? 1e-3f : 30.f);
        v[e] = nd(rng) * (h == 2 ? 0.01f : 4.f);
      }
      k[kv_dim - 1] = 300.f;
      kv.StoreToken(1, table, p, k.data(), v.data());
      kv.LoadToken(1, table, p, kb.data(), vb.data());
      for (int h = 0; h < base.n_kv_heads; ++h) {
        float ka = 0, va = 0;
        for (int d = 0; d < base.head_dim; ++d) {
          ka = std::max(ka, std::fabs(k[h * base.head_dim + d]));
          va = std::max(va, std::fabs(v[h * base.head_dim + d]));
        }
        for (int d = 0; d < base.head_dim; ++d) {
          const int e = h * base.head_dim + d;
          EXPECT_LE(std::fabs(kb[e] - k[e]), Bound(t, k[e], ka))
              << KvPrecisionName(t) << " K pos " << p << " e " << e << " " << k[e];
          EXPECT_LE(std::fabs(vb[e] - v[e]), Bound(t, v[e], va))
              << KvPrecisionName(t) << " V pos " << p << " e " << e << " " << v[e];
        }
      }
    }
  }
}

// A NaN value (a broken activation) is stored without undefined behaviour
// and does not spread to the other values of its head through the scale.
TEST(KvPrecisionTest, NanDoesNotPoisonTheScale) {
  for (KvType t : {KvType::kInt8, KvType::kFP8}) {
    KvCache kv({1, 1, 16, 16, t}, 1);
    const int32_t table[] = {0};
    std::vector<float> k(16, 1.f), v(16, 2.f), kb(16), vb(16);
    k[3] = std::nanf("");
    kv.StoreToken(0, table, 0, k.data(), v.data());
    kv.LoadToken(0, table, 0, kb.data(), vb.data());
    EXPECT_NEAR(kb[0], 1.f, 1e-3) << KvPrecisionName(t);  // the scale is kept in F16
    EXPECT_NEAR(vb[5], 2.f, 2e-3) << KvPrecisionName(t);
  }
}

struct Case {
  int n_tokens, first_pos, group, head_dim, block_size;
  int window = 0;
};

// Attention of one case in one precision through one kernel variant.
// Returns the largest difference from attention over the values before they
// were stored.
double RunCase(KvType type, const Case& c, attention_internal::AttentionFn fn) {
  std::mt19937 rng(c.n_tokens * 131 + c.first_pos);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int n_ctx = c.first_pos + c.n_tokens;
  const KvCacheShape shape{1, 1, c.head_dim, c.block_size, type};
  const int n_blocks = static_cast<int>(shape.BlocksFor(n_ctx));
  std::vector<int32_t> table(n_blocks);
  std::iota(table.begin(), table.end(), 1);
  std::shuffle(table.begin(), table.end(), rng);
  KvCache kv(shape, n_blocks + 1);
  const int hd = c.head_dim;
  std::vector<float> k0(n_ctx * hd), v0(k0.size()), ks(k0.size()), vs(k0.size());
  for (auto& x : k0) x = nd(rng);
  for (auto& x : v0) x = nd(rng);
  for (int p = 0; p < n_ctx; ++p) {
    kv.StoreToken(0, table.data(), p, &k0[p * hd], &v0[p * hd]);
    kv.LoadToken(0, table.data(), p, &ks[p * hd], &vs[p * hd]);
  }
  const int q_stride = c.group * hd;
  std::vector<float> q(c.n_tokens * q_stride), out(q.size(), -1.f);
  for (auto& x : q) x = nd(rng);
  AttentionChunk a;
  a.q = q.data();
  a.out = out.data();
  a.q_stride = q_stride;
  a.n_tokens = c.n_tokens;
  a.group = c.group;
  a.head_dim = hd;
  a.first_pos = c.first_pos;
  a.window = c.window;
  a.scale = 1.f / std::sqrt(float(hd));
  a.kv = kv.Head(0, 0);
  a.block_table = table.data();
  std::vector<float> scratch(AttentionScratchFloats(n_ctx, hd, c.block_size));
  fn(a, scratch.data());
  // Chunking does not change a row's output, in any precision.
  for (int i = 0; i < c.n_tokens; i += 3) {
    std::vector<float> one(q_stride, -1.f);
    AttentionChunk a1 = a;
    a1.q = q.data() + i * q_stride;
    a1.out = one.data();
    a1.n_tokens = 1;
    a1.first_pos = c.first_pos + i;
    fn(a1, scratch.data());
    EXPECT_EQ(0, std::memcmp(one.data(), out.data() + i * q_stride, sizeof(float) * q_stride))
        << KvPrecisionName(type) << " row " << i;
  }
  double worst_kept = 0, worst_exact = 0;
  for (int i = 0; i < c.n_tokens; ++i) {
    for (int h = 0; h < c.group; ++h) {
      const float* qr = &q[i * q_stride + h * hd];
      const int n = c.first_pos + i + 1;
      const int lo = c.window > 0 ? std::max(0, n - c.window) : 0;
      for (const auto* kvs : {&ks, &k0}) {
        const bool kept = kvs == &ks;
        const std::vector<float>& K = kept ? ks : k0;
        const std::vector<float>& V = kept ? vs : v0;
        std::vector<double> s(n, 0.0);
        double mx = -1e300, sum = 0;
        for (int p = lo; p < n; ++p) {
          double acc = 0;
          for (int d = 0; d < hd; ++d) acc += double(qr[d]) * K[p * hd + d];
          s[p] = acc * a.scale;
          mx = std::max(mx, s[p]);
        }
        for (int p = lo; p < n; ++p) sum += (s[p] = std::exp(s[p] - mx));
        for (int d = 0; d < hd; ++d) {
          double o = 0;
          for (int p = lo; p < n; ++p) o += s[p] / sum * V[p * hd + d];
          const double err = std::fabs(o - out[i * q_stride + h * hd + d]);
          (kept ? worst_kept : worst_exact) = std::max(kept ? worst_kept : worst_exact, err);
        }
      }
    }
  }
  EXPECT_LT(worst_kept, 2e-5) << KvPrecisionName(type) << " n_tokens=" << c.n_tokens
                              << " first_pos=" << c.first_pos << " hd=" << hd
                              << " window=" << c.window;
  return worst_exact;
}

// Largest output error against unrounded K/V (inputs N(0,1), outputs are
// averages of V rows), per precision: stated here, measured below.
double Tolerance(KvType t) {
  switch (t) {
    case KvType::kF32: return 2e-5;
    case KvType::kF16: return 2e-3;
    case KvType::kBF16: return 1.5e-2;
    case KvType::kInt8: return 2.5e-2;
    case KvType::kFP8: return 0.15;  // 3 mantissa bits: a lone V row is off by up to 6%
  }
  return 0;
}

TEST(KvPrecisionTest, AttentionOverEveryPrecisionAndKernel) {
  const Case cases[] = {{1, 0, 1, 64, 16},     {5, 0, 3, 64, 16},      {1, 37, 3, 64, 16},
                        {32, 100, 3, 64, 16},  {17, 47, 4, 128, 32},   {2, 33, 12, 64, 16},
                        {1, 300, 1, 256, 16},  {3, 20, 2, 80, 16},     {20, 90, 4, 256, 16, 37},
                        {7, 15, 3, 64, 16, 1}, {5, 60, 2, 80, 16, 23}, {3, 16, 2, 32, 16}};
  for (int i = 0; i < kNumKernelIsas; ++i) {
    if (!CpuCanRun(static_cast<KernelIsa>(i))) continue;
    for (KvType t : kAllTypes) {
      double worst = 0;
      for (const Case& c : cases)
        worst = std::max(worst, RunCase(t, c, attention_internal::kVariants[i]));
      EXPECT_LT(worst, Tolerance(t)) << KvPrecisionName(t) << " kernel " << i;
      if (i == 0) std::printf("kv %s: max |attention error| %.2e\n", KvPrecisionName(t), worst);
    }
  }
}

}  // namespace
}  // namespace brisk
