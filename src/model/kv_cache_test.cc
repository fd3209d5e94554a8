// The paged KV layout: what StoreToken writes is what Head() tells attention
// to read, in every layer, head and slot.
#include "model/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/attention.h"
#include "tensor/float16.h"

namespace brisk {
namespace {

uint16_t Half(const uint8_t* base, int64_t byte_offset) {
  uint16_t h;
  std::memcpy(&h, base + byte_offset, 2);
  return h;
}

TEST(KvCacheTest, StoreTokenIsReadBackThroughHead) {
  const KvCacheShape shape{/*n_layers=*/2, /*n_kv_heads=*/3, /*head_dim=*/8, /*block_size=*/16};
  KvCache kv(shape, /*num_blocks=*/5);
  EXPECT_EQ(kv.bytes(), 5 * shape.BytesPerBlock());
  EXPECT_EQ(shape.BlocksFor(0), 0);
  EXPECT_EQ(shape.BlocksFor(16), 1);
  EXPECT_EQ(shape.BlocksFor(17), 2);
  const int32_t table[] = {3, 0, 4};  // positions 0-15 in block 3, 16-31 in 0, 32-47 in 4
  const int kv_dim = static_cast<int>(shape.kv_dim());
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  // k[layer][pos][e], v likewise
  std::vector<float> k(2 * 40 * kv_dim), v(k.size());
  for (auto& x : k) x = nd(rng);
  for (auto& x : v) x = nd(rng);
  for (int l = 0; l < 2; ++l)
    for (int p = 0; p < 40; ++p)
      kv.StoreToken(l, table, p, &k[(l * 40 + p) * kv_dim], &v[(l * 40 + p) * kv_dim]);
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < shape.n_kv_heads; ++h) {
      const PagedKvHead head = kv.Head(l, h);
      ASSERT_EQ(head.block_size, shape.block_size);
      for (int p = 0; p < 40; ++p) {
        const int64_t b = table[p / head.block_size], s = p % head.block_size;
        for (int d = 0; d < shape.head_dim; ++d) {
          const int e = h * shape.head_dim + d;
          EXPECT_EQ(Half(head.k_base, b * head.block_stride + (d * head.block_size + s) * 2),
                    FloatToHalf(k[(l * 40 + p) * kv_dim + e]))
              << "layer " << l << " head " << h << " pos " << p << " dim " << d;
          EXPECT_EQ(Half(head.v_base, b * head.block_stride + (s * head.v_row_stride + d) * 2),
                    FloatToHalf(v[(l * 40 + p) * kv_dim + e]))
              << "layer " << l << " head " << h << " pos " << p << " dim " << d;
        }
      }
    }
  }
  // Copy-on-write copies every layer's whole block (K and V: block_stride
  // bytes from head 0's K).
  kv.CopyBlock(3, 1);
  for (int l = 0; l < 2; ++l) {
    const PagedKvHead head = kv.Head(l, 0);
    for (int64_t i = 0; i < head.block_stride; ++i)
      ASSERT_EQ(head.k_base[1 * head.block_stride + i], head.k_base[3 * head.block_stride + i]);
  }
}

// Attention over the cache: a token that sees one position gets that
// position's V (softmax over one score is 1), per query head of the group.
TEST(KvCacheTest, AttentionReadsWhatWasStored) {
  const KvCacheShape shape{1, 2, 16, 16};
  KvCache kv(shape, 2);
  const int32_t table[] = {1};
  std::vector<float> k(32), v(32);
  for (int i = 0; i < 32; ++i) {
    k[i] = 0.1f * static_cast<float>(i);
    v[i] = 1.0f + 0.5f * static_cast<float>(i);  // exact in F16
  }
  kv.StoreToken(0, table, 0, k.data(), v.data());
  std::vector<float> q(2 * 16, 0.3f), out(q.size(), -1.f);
  std::vector<float> scratch(AttentionScratchFloats(1, 16, 16));
  for (int h = 0; h < 2; ++h) {
    AttentionChunk a;
    a.q = q.data();
    a.out = out.data();
    a.q_stride = 32;
    a.n_tokens = 1;
    a.group = 2;  // two query heads share KV head h
    a.head_dim = 16;
    a.first_pos = 0;
    a.kv = kv.Head(0, h);
    a.block_table = table;
    AttentionCausal(a, scratch.data());
    for (int g = 0; g < 2; ++g)
      for (int d = 0; d < 16; ++d) EXPECT_FLOAT_EQ(out[g * 16 + d], v[h * 16 + d]);
  }
}

}  // namespace
}  // namespace brisk
