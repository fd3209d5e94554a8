#include "model/gguf_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

namespace brisk {
namespace {

namespace fs = std::filesystem;

class GgufWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("brisk_gguf_writer_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

GgufValue Scalar(GgufType t, int64_t i, uint64_t u, double f) {
  GgufValue v;
  v.type = t;
  v.i = i;
  v.u = u;
  v.f = f;
  return v;
}

TEST_F(GgufWriterTest, RoundTripsEveryMetadataTypeAndTensors) {
  GgufWriter w(Path("rt.gguf"));
  w.SetValue("u8", Scalar(GgufType::kUint8, 0, 200, 0));
  w.SetValue("i8", Scalar(GgufType::kInt8, -100, 0, 0));
  w.SetValue("u16", Scalar(GgufType::kUint16, 0, 60000, 0));
  w.SetValue("i16", Scalar(GgufType::kInt16, -30000, 0, 0));
  w.SetValue("u32", Scalar(GgufType::kUint32, 0, 4000000000u, 0));
  w.SetValue("i32", Scalar(GgufType::kInt32, -2000000000, 0, 0));
  w.SetValue("u64", Scalar(GgufType::kUint64, 0, 1ull << 60, 0));
  w.SetValue("i64", Scalar(GgufType::kInt64, -(1ll << 60), 0, 0));
  w.SetValue("f32", Scalar(GgufType::kFloat32, 0, 0, 1.5));
  w.SetValue("f64", Scalar(GgufType::kFloat64, 0, 0, 3.141592653589793));
  w.SetValue("bool", Scalar(GgufType::kBool, 1, 1, 0));
  w.SetString("str", "hello \xe2\x9c\x93");
  GgufValue strs;
  strs.type = GgufType::kArray;
  strs.elem_type = GgufType::kString;
  strs.str_arr = {"a", "", "ccc"};
  w.SetValue("arr.str", strs);
  GgufValue ints;
  ints.type = GgufType::kArray;
  ints.elem_type = GgufType::kInt32;
  for (int k : {-1, 0, 7}) ints.arr.push_back(Scalar(GgufType::kInt32, k, 0, 0));
  w.SetValue("arr.i32", ints);
  GgufValue floats;
  floats.type = GgufType::kArray;
  floats.elem_type = GgufType::kFloat32;
  for (double f : {0.25, -2.0}) floats.arr.push_back(Scalar(GgufType::kFloat32, 0, 0, f));
  w.SetValue("arr.f32", floats);
  GgufValue nested;
  nested.type = GgufType::kArray;
  nested.elem_type = GgufType::kArray;
  nested.arr.push_back(ints);
  w.SetValue("arr.nested", nested);
  w.SetU32("general.alignment", 64);

  std::mt19937 rng(1);
  std::vector<float> a(64 * 3), b(7);
  for (float& x : a) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  for (float& x : b) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  std::vector<uint8_t> q(static_cast<size_t>(RowBytes(DType::kQ8_0, 64) * 3));
  for (int r = 0; r < 3; ++r)
    QuantizeRow(DType::kQ8_0, a.data() + r * 64, q.data() + r * RowBytes(DType::kQ8_0, 64), 64);
  ASSERT_TRUE(w.AddTensor("q", {64, 3}, DType::kQ8_0).ok());
  ASSERT_TRUE(w.AddTensor("v", {7}, DType::kF32).ok());
  EXPECT_FALSE(w.AddTensor("bad", {33, 2}, DType::kQ8_0).ok());  // 33 % 32 != 0
  ASSERT_TRUE(w.Begin().ok());
  // Appended in pieces that straddle the two tensors.
  std::vector<uint8_t> all(q);
  all.insert(all.end(), reinterpret_cast<uint8_t*>(b.data()),
             reinterpret_cast<uint8_t*>(b.data() + b.size()));
  ASSERT_TRUE(w.Append({all.data(), 10}).ok());
  ASSERT_TRUE(w.Append({all.data() + 10, all.size() - 10}).ok());
  ASSERT_TRUE(w.Finish().ok());
  EXPECT_FALSE(fs::exists(Path("rt.gguf.tmp")));

  auto f = GgufFile::Open(Path("rt.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.Find("u8")->u, 200u);
  EXPECT_EQ(g.Find("i8")->i, -100);
  EXPECT_EQ(g.Find("u16")->u, 60000u);
  EXPECT_EQ(g.Find("i16")->i, -30000);
  EXPECT_EQ(g.Find("u32")->u, 4000000000u);
  EXPECT_EQ(g.Find("i32")->i, -2000000000);
  EXPECT_EQ(g.Find("u64")->u, 1ull << 60);
  EXPECT_EQ(g.Find("i64")->i, -(1ll << 60));
  EXPECT_EQ(g.Find("f32")->f, 1.5);
  EXPECT_EQ(g.Find("f64")->f, 3.141592653589793);
  EXPECT_EQ(g.Find("f32")->type, GgufType::kFloat32);
  EXPECT_EQ(*g.GetBool("bool"), true);
  EXPECT_EQ(*g.GetString("str"), "hello \xe2\x9c\x93");
  EXPECT_EQ(**g.GetStringArray("arr.str"), strs.str_arr);
  EXPECT_EQ(*g.GetIntArray("arr.i32"), (std::vector<int64_t>{-1, 0, 7}));
  EXPECT_EQ(*g.GetFloatArray("arr.f32"), (std::vector<float>{0.25f, -2.0f}));
  const GgufValue* n = g.Find("arr.nested");
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(n->arr.size(), 1u);
  EXPECT_EQ(n->arr[0].elem_type, GgufType::kInt32);
  EXPECT_EQ(n->arr[0].arr[2].i, 7);
  EXPECT_EQ(g.metadata().size(), 17u);

  ASSERT_EQ(g.tensors().size(), 2u);
  const GgufTensorInfo& tq = g.tensors()[0];
  EXPECT_EQ(tq.name, "q");
  EXPECT_EQ(tq.dims, (std::vector<int64_t>{64, 3}));
  EXPECT_EQ(tq.ggml_type, static_cast<uint32_t>(DType::kQ8_0));
  EXPECT_EQ(std::memcmp(tq.data, q.data(), q.size()), 0);
  const GgufTensorInfo& tv = g.tensors()[1];
  EXPECT_EQ(tv.offset % 64, 0u);  // general.alignment honoured
  EXPECT_EQ((tv.data - g.bytes().data()) % 64, 0);
  EXPECT_EQ(std::memcmp(tv.data, b.data(), b.size() * 4), 0);
}

TEST_F(GgufWriterTest, UnfinishedWriteLeavesNoFile) {
  {
    GgufWriter w(Path("half.gguf"));
    ASSERT_TRUE(w.AddTensor("t", {32, 2}, DType::kF32).ok());
    ASSERT_TRUE(w.Begin().ok());
    std::vector<uint8_t> some(100);
    ASSERT_TRUE(w.Append(some).ok());
    EXPECT_TRUE(fs::exists(Path("half.gguf.tmp")));
    EXPECT_FALSE(w.Finish().ok());  // 100 of 256 bytes
  }
  EXPECT_FALSE(fs::exists(Path("half.gguf.tmp")));
  EXPECT_FALSE(fs::exists(Path("half.gguf")));
}

TEST_F(GgufWriterTest, TooMuchDataIsAnError) {
  GgufWriter w(Path("over.gguf"));
  ASSERT_TRUE(w.AddTensor("t", {4}, DType::kF32).ok());
  ASSERT_TRUE(w.Begin().ok());
  std::vector<uint8_t> bytes(20);
  EXPECT_FALSE(w.Append(bytes).ok());
}

TEST_F(GgufWriterTest, UnwritableDirectoryIsAnError) {
  GgufWriter w(Path("no/such/dir/x.gguf"));
  ASSERT_TRUE(w.AddTensor("t", {4}, DType::kF32).ok());
  Status s = w.Begin();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot create"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace brisk
