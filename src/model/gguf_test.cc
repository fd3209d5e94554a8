#include "model/gguf.h"

#include <gtest/gtest.h>

#include "util/test_support.h"

#include <cstring>
#include <filesystem>
#include <random>

namespace brisk {
namespace {

// Builds GGUF images byte by byte (little-endian host assumed, as x86-64).
class GgufBuilder {
 public:
  template <typename T>
  void Put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void Str(const std::string& s) {
    Put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void Header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    Put<uint32_t>(0x46554747);
    Put<uint32_t>(version);
    Put<uint64_t>(n_tensors);
    Put<uint64_t>(n_kv);
  }
  void Align(size_t a) {
    while (bytes.size() % a) bytes.push_back(0);
  }
  std::vector<uint8_t> bytes;
};

// A small valid file: 5 metadata values and two F32 tensors.
std::vector<uint8_t> ValidImage() {
  GgufBuilder b;
  b.Header(2, 5);
  b.Str("general.architecture");
  b.Put<uint32_t>(8);
  b.Str("llama");
  b.Str("llama.block_count");
  b.Put<uint32_t>(4);
  b.Put<uint32_t>(30);
  b.Str("llama.rope.freq_base");
  b.Put<uint32_t>(6);
  b.Put<float>(10000.f);
  b.Str("tokenizer.ggml.tokens");
  b.Put<uint32_t>(9);
  b.Put<uint32_t>(8);
  b.Put<uint64_t>(3);
  b.Str("a");
  b.Str("b");
  b.Str("<s>");
  b.Str("tokenizer.ggml.token_type");
  b.Put<uint32_t>(9);
  b.Put<uint32_t>(5);
  b.Put<uint64_t>(3);
  b.Put<int32_t>(1);
  b.Put<int32_t>(1);
  b.Put<int32_t>(3);
  // tensor infos
  b.Str("w");
  b.Put<uint32_t>(2);
  b.Put<uint64_t>(4);
  b.Put<uint64_t>(2);
  b.Put<uint32_t>(0);  // F32
  b.Put<uint64_t>(0);
  b.Str("v");
  b.Put<uint32_t>(1);
  b.Put<uint64_t>(3);
  b.Put<uint32_t>(0);
  b.Put<uint64_t>(32);
  b.Align(32);
  for (int i = 0; i < 8; ++i) b.Put<float>(static_cast<float>(i));
  for (int i = 0; i < 3; ++i) b.Put<float>(10.f + i);
  return b.bytes;
}

TEST(GgufTest, ParsesValidImage) {
  auto img = ValidImage();
  auto f = GgufFile::Parse(img);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetInt("llama.block_count"), 30);
  EXPECT_FLOAT_EQ(*g.GetFloat("llama.rope.freq_base"), 10000.f);
  auto toks = g.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(toks.ok());
  EXPECT_EQ((**toks)[2], "<s>");
  EXPECT_EQ(*g.GetIntArray("tokenizer.ggml.token_type"), (std::vector<int64_t>{1, 1, 3}));
  const GgufTensorInfo* w = g.FindTensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(w->size_bytes, 32u);
  float x[8];
  std::memcpy(x, w->data, sizeof(x));
  EXPECT_EQ(x[7], 7.f);
  const GgufTensorInfo* v = g.FindTensor("v");
  ASSERT_NE(v, nullptr);
  float y;
  std::memcpy(&y, v->data + 8, 4);
  EXPECT_EQ(y, 12.f);
}

TEST(GgufTest, TypedGettersReportWrongTypeAndMissing) {
  auto img = ValidImage();
  auto f = GgufFile::Parse(img);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->GetInt("general.architecture").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->GetString("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*(*f)->GetIntOr("nope", 7), 7);
  EXPECT_FALSE((*f)->GetIntOr("general.architecture", 7).ok());
}

TEST(GgufTest, EveryTruncationIsACleanError) {
  auto img = ValidImage();
  for (size_t n = 0; n < img.size(); ++n) {
    std::vector<uint8_t> cut(img.begin(), img.begin() + n);
    auto f = GgufFile::Parse(cut);
    EXPECT_FALSE(f.ok()) << "prefix of " << n << " bytes parsed";
    if (!f.ok()) {
      EXPECT_FALSE(f.status().message().empty());
    }
  }
}

TEST(GgufTest, BadMagicAndVersion) {
  auto img = ValidImage();
  img[0] = 'X';
  auto f = GgufFile::Parse(img);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("bad magic"), std::string::npos);
  img = ValidImage();
  img[4] = 9;
  f = GgufFile::Parse(img);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kUnimplemented);
}

TEST(GgufTest, RandomCorruptionNeverCrashes) {
  auto img = ValidImage();
  std::mt19937 rng(42);
  for (int iter = 0; iter < 20000; ++iter) {
    auto bad = img;
    int flips = 1 + rng() % 4;
    for (int k = 0; k < flips; ++k) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    auto f = GgufFile::Parse(bad);
    if (f.ok()) {
      for (const auto& t : (*f)->tensors()) {
        ASSERT_LE(t.data + t.size_bytes, bad.data() + bad.size());
        ASSERT_GE(t.data, bad.data());
      }
    }
  }
}

TEST(GgufTest, MissingFileIsNotFound) {
  auto f = GgufFile::Open("/nonexistent/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
}

TEST(GgufTest, OpensDefaultModel) {
  std::string path = std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) BRISK_SKIP_OR_FAIL_MISSING("default model not installed");
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*(*f)->GetString("general.architecture"), "llama");
  EXPECT_EQ((*f)->tensors().size(), 272u);
  EXPECT_EQ((**(*f)->GetStringArray("tokenizer.ggml.tokens")).size(), 49152u);
  const auto* emb = (*f)->FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dims, (std::vector<int64_t>{576, 49152}));
}

}  // namespace
}  // namespace brisk
