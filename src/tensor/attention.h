// Causal attention of a chunk of query tokens of one sequence against its
// paged K/V history, for one KV head and the query heads that share it
// (GQA). Query rows, up to four at a time, read K/V in their stored
// precision (F16 by default; see KvType) straight from the cache blocks
// (every value loaded serves all those rows and all heads of the group), in
// tiles of kAttentionTile positions: the tile's scores (K blocks are stored
// transposed, [head dims][block size], so 16 scores are one vector FMA per
// head dimension), an online softmax (running max and sum), then the
// tile's weighted sum of V rows, with the accumulators in registers. A row's
// arithmetic depends only on that row, so a sequence's outputs are bitwise
// the same however its tokens are chunked or batched. Compiled per CPU
// target like the matmul kernels.
#pragma once

#include <cstdint>

#include "tensor/cpu_features.h"

namespace brisk {

// How the KV cache stores K and V (cache.kv_precision). F16 is the default;
// F32 the exact reference; BF16 keeps F32's range with 8 mantissa bits;
// INT8 and FP8 (E4M3) take one byte a value plus, for K and for V, one F16
// scale per position and group of KvScaleGroup(head_dim) values of a KV head
// (64 where head_dim allows), set from the group's largest magnitude when the
// token is stored (so appending never rescales what is already there).
enum class KvType : uint8_t { kF16, kF32, kBF16, kInt8, kFP8 };

// Bytes of one stored value (scales not counted).
inline int KvTypeBytes(KvType t) {
  return t == KvType::kF32 ? 4 : (t == KvType::kInt8 || t == KvType::kFP8) ? 1 : 2;
}
inline bool KvTypeScaled(KvType t) { return t == KvType::kInt8 || t == KvType::kFP8; }
// Values of a KV head that share a scale (scaled types): 64, else 32 or 16,
// whichever divides head_dim; else the whole head. A head of 256 values
// with one scale lets a few large channels (Gemma's K after its per-head
// norm) coarsen all the others.
constexpr int KvScaleGroup(int head_dim) {
  return head_dim % 64 == 0 ? 64 : head_dim % 32 == 0 ? 32 : head_dim % 16 == 0 ? 16 : head_dim;
}

// One KV head's paged history in one layer, as the KV cache lays it out
// (model/kv_cache.h owns that layout and fills this in). Offsets in bytes;
// e = KvTypeBytes(type). For block b, K is [head_dim][block_size] at
// k_base + b * block_stride (dimension d of slot s at + (d * block_size + s)
// * e), V rows (head_dim values) at v_base + b * block_stride + s *
// v_row_stride * e. Scaled types: the F16 scale of slot s for values
// [g * scale_group, (g + 1) * scale_group) is at k_scale / v_scale + b *
// block_stride + (g * block_size + s) * 2.
struct PagedKvHead {
  KvType type = KvType::kF16;
  const uint8_t* k_base = nullptr;
  const uint8_t* v_base = nullptr;
  const uint8_t* k_scale = nullptr;
  const uint8_t* v_scale = nullptr;
  int block_size = 16;  // a multiple of 16
  int scale_group = 0;  // values per scale (scaled types): KvScaleGroup(head_dim)
  int64_t block_stride = 0;
  int64_t v_row_stride = 0;
};

struct AttentionChunk {
  // Queries: row (i, h) for token i < n_tokens, head h < group is at
  // q + i * q_stride + h * head_dim. Output rows use the same layout.
  const float* q = nullptr;
  float* out = nullptr;
  int64_t q_stride = 0;
  int n_tokens = 0;
  int group = 1;
  int head_dim = 0;  // at most 256
  // Token i attends to positions [0, first_pos + i] (inclusive), or with a
  // sliding window of w > 0 positions to [first_pos + i - w + 1, first_pos + i].
  int32_t first_pos = 0;
  int32_t window = 0;
  float scale = 1.f;
  // Paged history: position p is slot p % kv.block_size of block
  // block_table[p / kv.block_size].
  PagedKvHead kv;
  const int32_t* block_table = nullptr;
};

// Positions per tile of the row kernel (scores of a tile are kept for up to
// 16 query rows: rows x heads of the group).
inline constexpr int64_t kAttentionTile = 256;

// Floats of scratch one call needs: a tile's scores for up to 16 query rows,
// or (head dims not a multiple of 16) an f32 copy of K/V.
int64_t AttentionScratchFloats(int64_t n_ctx, int head_dim, int block_size);

// `scratch` holds AttentionScratchFloats(first_pos + n_tokens, head_dim,
// block_size) floats.
void AttentionCausal(const AttentionChunk& a, float* scratch);

// Entry points per target (internal; tests compare them).
namespace attention_internal {
using AttentionFn = void (*)(const AttentionChunk& a, float* scratch);
void AttentionScalar(const AttentionChunk& a, float* scratch);
void AttentionAvx2(const AttentionChunk& a, float* scratch);
void AttentionAvx512(const AttentionChunk& a, float* scratch);
// The KV precisions other than F16 (compiled in a file of their own).
void AttentionAvx2OtherKv(const AttentionChunk& a, float* scratch);
void AttentionAvx512OtherKv(const AttentionChunk& a, float* scratch);
// The attention op's variant table, indexed by KernelIsa.
extern const AttentionFn kVariants[kNumKernelIsas];
}  // namespace attention_internal

}  // namespace brisk
