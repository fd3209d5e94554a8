#include "model/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/float16.h"
#include "tensor/fp8.h"
#include "tensor/kernels.h"

namespace brisk {

namespace {

struct KvPrecisionName {
  const char* name;
  KvType type;
};
constexpr KvPrecisionName kKvPrecisions[] = {{"f16", KvType::kF16},
                                             {"f32", KvType::kF32},
                                             {"bf16", KvType::kBF16},
                                             {"int8", KvType::kInt8},
                                             {"fp8", KvType::kFP8}};

// The F16 scale of n values: their largest magnitude over `top` (the
// format's largest code), rounded to F16 and kept finite; 0 when all are 0.
uint16_t ScaleFor(const float* x, int64_t n, float top) {
  float amax = 0.f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  return FloatToHalf(std::min(amax / top, 65504.f));
}

// One value in the cache's precision, given 1/scale (scaled types).
void StoreValue(KvType type, float x, float inv_scale, uint8_t* dst) {
  switch (type) {
    case KvType::kF16: {
      const uint16_t h = FloatToHalf(x);
      std::memcpy(dst, &h, 2);
      return;
    }
    case KvType::kF32: std::memcpy(dst, &x, 4); return;
    case KvType::kBF16: {
      const uint16_t h = FloatToBF16(x);
      std::memcpy(dst, &h, 2);
      return;
    }
    case KvType::kInt8: {
      float q = std::clamp(x * inv_scale, -127.f, 127.f);
      if (std::isnan(q)) q = 0.f;  // a NaN activation: no undefined cast
      // Half away from zero (no libm call on the store path).
      *dst = static_cast<uint8_t>(static_cast<int8_t>(q + (q >= 0.f ? 0.5f : -0.5f)));
      return;
    }
    case KvType::kFP8: *dst = FloatToE4M3(x * inv_scale); return;
  }
}

float LoadValue(KvType type, const uint8_t* src) {
  uint16_t h = 0;
  switch (type) {
    case KvType::kF16: std::memcpy(&h, src, 2); return HalfToFloat(h);
    case KvType::kF32: {
      float f;
      std::memcpy(&f, src, 4);
      return f;
    }
    case KvType::kBF16: std::memcpy(&h, src, 2); return BF16ToFloat(h);
    case KvType::kInt8: return static_cast<float>(static_cast<int8_t>(*src));
    case KvType::kFP8: return E4M3ToFloat(*src);
  }
  return 0.f;
}

}  // namespace

Expected<KvType> ParseKvPrecision(const std::string& name) {
  for (const auto& p : kKvPrecisions)
    if (name == p.name) return p.type;
  std::string all;
  for (const auto& p : kKvPrecisions) all += std::string(all.empty() ? "" : ", ") + p.name;
  return InvalidArgument("unknown KV cache precision '{}' (one of: {})", name, all);
}

const char* KvPrecisionName(KvType type) {
  for (const auto& p : kKvPrecisions)
    if (p.type == type) return p.name;
  return "?";
}

std::vector<std::string> KvPrecisionNames() {
  std::vector<std::string> out;
  for (const auto& p : kKvPrecisions) out.push_back(p.name);
  return out;
}

KvCache::KvCache(const KvCacheShape& shape, int64_t num_blocks)
    : shape_(shape),
      num_blocks_(num_blocks),
      // calloc: large pools come zeroed from the OS and are committed lazily,
      // page by page, as blocks are first written.
      data_(static_cast<uint8_t*>(
          std::calloc(static_cast<size_t>(num_blocks * shape.BytesPerPage()), 1))) {}

int64_t KvCache::BlocksForBudget(const KvCacheShape& shape, int64_t budget_bytes) {
  return std::max<int64_t>(1, budget_bytes / shape.BytesPerPage());
}

void KvCache::StoreToken(int layer, const int32_t* block_table, int32_t pos, const float* k,
                         const float* v) {
  const int bs = shape_.block_size;
  const int64_t kv_dim = shape_.kv_dim();
  const int32_t block = block_table[pos / bs];
  const int slot = pos % bs;
  uint8_t* kb = KBlock(layer, block);  // [kv_dim][bs]: K transposed
  uint8_t* vb = VBlock(layer, block) + slot * kv_dim * KvTypeBytes(shape_.type);
  if (shape_.type == KvType::kF16) {  // the default: the row converter for V
    for (int64_t e = 0; e < kv_dim; ++e) {
      const uint16_t h = FloatToHalf(k[e]);
      std::memcpy(kb + (e * bs + slot) * 2, &h, 2);
    }
    F32ToF16Row(v, reinterpret_cast<uint16_t*>(vb), kv_dim);
    return;
  }
  const int es = KvTypeBytes(shape_.type);
  if (!KvTypeScaled(shape_.type)) {
    for (int64_t e = 0; e < kv_dim; ++e) {
      StoreValue(shape_.type, k[e], 1.f, kb + (e * bs + slot) * es);
      StoreValue(shape_.type, v[e], 1.f, vb + e * es);
    }
    return;
  }
  // Group g of the kv_dim values (heads one after the other) has its scales
  // at g * bs + slot: groups never cross a head.
  const int gs = KvScaleGroup(shape_.head_dim);
  const float top = shape_.type == KvType::kInt8 ? 127.f : kE4M3Max;
  for (int64_t g = 0; g < shape_.scales_per_slot(); ++g) {
    const int64_t e0 = g * gs;
    const uint16_t ks = ScaleFor(k + e0, gs, top);
    const uint16_t vs = ScaleFor(v + e0, gs, top);
    std::memcpy(KScales(layer, block) + (g * bs + slot) * 2, &ks, 2);
    std::memcpy(VScales(layer, block) + (g * bs + slot) * 2, &vs, 2);
    const float k_inv = ks ? 1.f / HalfToFloat(ks) : 0.f;
    const float v_inv = vs ? 1.f / HalfToFloat(vs) : 0.f;
    for (int64_t e = e0; e < e0 + gs; ++e) {
      StoreValue(shape_.type, k[e], k_inv, kb + (e * bs + slot) * es);
      StoreValue(shape_.type, v[e], v_inv, vb + e * es);
    }
  }
}

void KvCache::LoadToken(int layer, const int32_t* block_table, int32_t pos, float* k,
                        float* v) const {
  const int bs = shape_.block_size;
  const int es = KvTypeBytes(shape_.type);
  const int64_t kv_dim = shape_.kv_dim();
  const int32_t block = block_table[pos / bs];
  const int slot = pos % bs;
  const uint8_t* kb = KBlock(layer, block);
  const uint8_t* vb = VBlock(layer, block) + slot * kv_dim * es;
  const bool scaled = KvTypeScaled(shape_.type);
  const int gs = KvScaleGroup(shape_.head_dim);
  for (int64_t e = 0; e < kv_dim; ++e) {
    float ks = 1.f, vs = 1.f;
    if (scaled) {
      uint16_t k16, v16;
      std::memcpy(&k16, KScales(layer, block) + (e / gs * bs + slot) * 2, 2);
      std::memcpy(&v16, VScales(layer, block) + (e / gs * bs + slot) * 2, 2);
      ks = HalfToFloat(k16);
      vs = HalfToFloat(v16);
    }
    k[e] = LoadValue(shape_.type, kb + (e * bs + slot) * es) * ks;
    v[e] = LoadValue(shape_.type, vb + e * es) * vs;
  }
}

PagedKvHead KvCache::Head(int layer, int kv_head) const {
  const int64_t bs = shape_.block_size;
  PagedKvHead h;
  h.type = shape_.type;
  h.k_base = KBlock(layer, 0) + int64_t{kv_head} * shape_.head_dim * bs * KvTypeBytes(h.type);
  h.v_base = VBlock(layer, 0) + int64_t{kv_head} * shape_.head_dim * KvTypeBytes(h.type);
  if (KvTypeScaled(h.type)) {
    h.scale_group = KvScaleGroup(shape_.head_dim);
    const int64_t first = int64_t{kv_head} * (shape_.head_dim / h.scale_group);  // its first group
    h.k_scale = KScales(layer, 0) + first * bs * 2;
    h.v_scale = VScales(layer, 0) + first * bs * 2;
  }
  h.block_size = shape_.block_size;
  h.block_stride = shape_.BlockStride();
  h.v_row_stride = shape_.kv_dim();
  return h;
}

void KvCache::Prefault() {
  // Writing one byte per page commits it; the values stay zero.
  auto* page = reinterpret_cast<volatile uint8_t*>(data_.get());
  const int64_t n = bytes();
  for (int64_t i = 0; i < n; i += 4096) page[i] = 0;
}

void KvCache::CopyBlock(int64_t src, int64_t dst) {
  for (int j = 0; j < page_slots(); ++j) {
    uint8_t* base = data_.get() + j * num_blocks_ * shape_.BlockStride();
    std::memcpy(base + dst * shape_.BlockStride(), base + src * shape_.BlockStride(),
                shape_.BlockStride());
  }
}

}  // namespace brisk
