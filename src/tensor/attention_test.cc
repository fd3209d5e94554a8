#include "tensor/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "tensor/cpu_features.h"
#include "tensor/float16.h"

namespace brisk {
namespace {

struct Case {
  int n_tokens, first_pos, group, head_dim, block_size;
  int window = 0;  // sliding window (0: none)
};

// Paged K/V for one head in the cache's layout, plus a double-precision
// reference computed from the same F16 values.
void RunCase(const Case& c, void (*fn)(const AttentionChunk&, float*)) {
  std::mt19937 rng(c.n_tokens * 131 + c.first_pos);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int n_ctx = c.first_pos + c.n_tokens;
  const int n_blocks = (n_ctx + c.block_size - 1) / c.block_size;
  const int kv_dim = c.head_dim;  // one KV head
  const int64_t block_stride = 2LL * c.block_size * kv_dim;
  // Shuffled physical blocks, with one spare so ids are not 0..n-1.
  std::vector<int32_t> table(n_blocks);
  std::iota(table.begin(), table.end(), 1);
  std::shuffle(table.begin(), table.end(), rng);
  // Slots no position owns hold NaN: kernels must mask them, never read them into a sum.
  std::vector<uint16_t> cache((n_blocks + 1) * block_stride, uint16_t{0x7e00});
  std::vector<double> K(n_ctx * c.head_dim), V(n_ctx * c.head_dim);
  for (int p = 0; p < n_ctx; ++p) {
    uint16_t* kb = cache.data() + table[p / c.block_size] * block_stride;
    uint16_t* vb = kb + c.block_size * kv_dim;
    for (int d = 0; d < c.head_dim; ++d) {
      uint16_t kh = FloatToHalf(nd(rng)), vh = FloatToHalf(nd(rng));
      kb[d * c.block_size + p % c.block_size] = kh;
      vb[(p % c.block_size) * kv_dim + d] = vh;
      K[p * c.head_dim + d] = HalfToFloat(kh);
      V[p * c.head_dim + d] = HalfToFloat(vh);
    }
  }
  const int q_stride = c.group * c.head_dim;
  std::vector<float> q(c.n_tokens * q_stride), out(q.size(), -1.f);
  for (auto& x : q) x = nd(rng);
  AttentionChunk a;
  a.q = q.data();
  a.out = out.data();
  a.q_stride = q_stride;
  a.n_tokens = c.n_tokens;
  a.group = c.group;
  a.head_dim = c.head_dim;
  a.first_pos = c.first_pos;
  a.window = c.window;
  a.scale = 1.f / std::sqrt(float(c.head_dim));
  a.kv.k_base = reinterpret_cast<const uint8_t*>(cache.data());
  a.kv.v_base = reinterpret_cast<const uint8_t*>(cache.data() + c.block_size * kv_dim);
  a.kv.block_size = c.block_size;
  a.kv.block_stride = block_stride * 2;  // bytes
  a.kv.v_row_stride = kv_dim;
  a.block_table = table.data();
  std::vector<float> scratch(AttentionScratchFloats(n_ctx, c.head_dim, c.block_size));
  fn(a, scratch.data());
  // Each row alone (a decode step at its position) gives bitwise the same
  // output as within the chunk: outputs must not depend on chunking.
  for (int i = 0; i < c.n_tokens; ++i) {
    std::vector<float> one(q_stride, -1.f);
    AttentionChunk a1 = a;
    a1.q = q.data() + i * q_stride;
    a1.out = one.data();
    a1.n_tokens = 1;
    a1.first_pos = c.first_pos + i;
    fn(a1, scratch.data());
    EXPECT_EQ(0, std::memcmp(one.data(), out.data() + i * q_stride, sizeof(float) * q_stride))
        << "row " << i << " of n_tokens=" << c.n_tokens << " first_pos=" << c.first_pos;
  }
  double worst = 0;
  for (int i = 0; i < c.n_tokens; ++i) {
    for (int h = 0; h < c.group; ++h) {
      const float* qr = &q[i * q_stride + h * c.head_dim];
      const int n = c.first_pos + i + 1;
      const int lo = c.window > 0 ? std::max(0, n - c.window) : 0;
      std::vector<double> s(n, -INFINITY);
      double mx = -1e300;
      for (int p = lo; p < n; ++p) {
        double acc = 0;
        for (int d = 0; d < c.head_dim; ++d) acc += double(qr[d]) * K[p * c.head_dim + d];
        s[p] = acc * a.scale;
        mx = std::max(mx, s[p]);
      }
      double sum = 0;
      for (auto& x : s) sum += (x = x == -INFINITY ? 0.0 : std::exp(x - mx));
      for (int d = 0; d < c.head_dim; ++d) {
        double o = 0;
        for (int p = 0; p < n; ++p) o += s[p] / sum * V[p * c.head_dim + d];
        worst = std::max(worst, std::fabs(o - out[i * q_stride + h * c.head_dim + d]));
      }
    }
  }
  EXPECT_LT(worst, 2e-5) << "n_tokens=" << c.n_tokens << " first_pos=" << c.first_pos
                         << " window=" << c.window << " group=" << c.group
                         << " bs=" << c.block_size;
}

TEST(AttentionTest, EveryVariantMatchesReference) {
  std::vector<attention_internal::AttentionFn> fns;
  for (int i = 0; i < kNumKernelIsas; ++i)
    if (CpuCanRun(static_cast<KernelIsa>(i))) fns.push_back(attention_internal::kVariants[i]);
  ASSERT_EQ(fns[0], attention_internal::AttentionScalar);
  const Case cases[] = {{1, 0, 1, 64, 16},
                        {1, 0, 3, 64, 16},
                        {5, 0, 3, 64, 16},
                        {1, 37, 3, 64, 16},
                        {7, 15, 3, 64, 16},
                        {32, 100, 3, 64, 16},
                        {3, 16, 2, 32, 16},
                        {17, 47, 4, 128, 32},
                        {1, 200, 3, 64, 32},
                        {2, 33, 12, 64, 16},
                        {3, 20, 2, 80, 16},
                        {4, 9, 3, 40, 16},
                        {1, 300, 1, 256, 16},
                        // Sliding windows (Gemma 3's local layers), on both kernels.
                        {1, 300, 1, 256, 16, 64},
                        {20, 90, 4, 256, 16, 37},
                        {33, 0, 3, 64, 16, 16},
                        {7, 15, 3, 64, 16, 1},
                        {5, 60, 2, 80, 16, 23},
                        {17, 47, 4, 128, 32, 512}};
  for (auto fn : fns)
    for (const auto& c : cases) RunCase(c, fn);
}

}  // namespace
}  // namespace brisk
