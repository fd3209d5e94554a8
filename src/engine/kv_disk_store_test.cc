// The disk tier's store alone: files in a temporary directory, no model.
#include "engine/kv_disk_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

namespace brisk {
namespace {

namespace fs = std::filesystem;

// The payload of block `i` with `pages`: bytes anyone can recompute.
std::vector<uint8_t> PayloadOf(int i, uint32_t pages, size_t bytes_per_page) {
  std::vector<uint8_t> p(bytes_per_page * pages);
  std::mt19937 rng(static_cast<uint32_t>(i * 131 + pages));
  for (auto& b : p) b = static_cast<uint8_t>(rng());
  return p;
}

BlockHash HashOf(int i) { return ChainBlockHash(RootBlockHash("kv-disk-test"), {&i, 1}); }

class KvDiskStoreTest : public ::testing::Test {
 protected:
  static constexpr size_t kPage = 4096;
  // One page's entry: the header, one page checksum, the page.
  static constexpr int64_t kFile = KvDiskStore::kHeaderBytes + 8 + kPage;

  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("brisk-kv-disk-{}-{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<KvDiskStore> Open(int64_t capacity = int64_t{1} << 30,
                                    std::string key = "model-a|f16",
                                    int64_t queue = int64_t{64} << 20) {
    KvDiskStoreOptions o;
    o.dir = dir_.string();
    o.capacity_bytes = capacity;
    o.serving_key = std::move(key);
    o.write_queue_bytes = queue;
    auto s = KvDiskStore::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  static bool PutBlock(KvDiskStore& s, int i, uint32_t pages = 1) {
    const std::vector<uint8_t> p = PayloadOf(i, pages, kPage);
    auto buf = std::make_unique<uint8_t[]>(p.size());
    std::copy(p.begin(), p.end(), buf.get());
    return s.Put(HashOf(i), pages, std::move(buf), p.size());
  }

  // Reads block i back; the status, and whether the bytes are block i's.
  static Status GetBlock(KvDiskStore& s, int i, uint32_t pages = 1, bool* same = nullptr) {
    std::vector<uint8_t> got(kPage * pages);
    // Two spans per page, to read the way the tier scatters into slots.
    std::vector<std::span<uint8_t>> out;
    for (uint32_t p = 0; p < pages; ++p) {
      out.emplace_back(got.data() + p * kPage, kPage / 2);
      out.emplace_back(got.data() + p * kPage + kPage / 2, kPage / 2);
    }
    Status st = s.Get(HashOf(i), pages, out);
    if (same) *same = got == PayloadOf(i, pages, kPage);
    return st;
  }

  fs::path EntryPath(const KvDiskStore& s, int i, uint32_t pages = 1) const {
    const BlockHash h = HashOf(i);
    return fs::path(s.key_dir()) / fmt::format("{:016x}{:016x}-p{}.kv", h.hi, h.lo, pages);
  }

  fs::path dir_;
};

TEST_F(KvDiskStoreTest, WritesReadsBackAndCounts) {
  auto s = Open();
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->Find(HashOf(1)));
  ASSERT_TRUE(PutBlock(*s, 1));
  ASSERT_TRUE(PutBlock(*s, 2));
  s->Flush();
  EXPECT_EQ(s->Find(HashOf(1)), 1u);
  const BlockHash chain[] = {HashOf(1), HashOf(2), HashOf(3), HashOf(1)};
  EXPECT_EQ(s->Match(chain), 2);
  bool same = false;
  ASSERT_TRUE(GetBlock(*s, 1, 1, &same).ok());
  EXPECT_TRUE(same);
  EXPECT_TRUE(fs::exists(EntryPath(*s, 1)));
  EXPECT_EQ(GetBlock(*s, 3).code(), StatusCode::kNotFound);
  // The same block again is not written twice.
  EXPECT_FALSE(s->WantsPut(HashOf(1), 1));
  EXPECT_FALSE(PutBlock(*s, 1));
  const KvDiskStats st = s->stats();
  EXPECT_TRUE(st.enabled);
  EXPECT_FALSE(st.writes_disabled);
  EXPECT_EQ(st.entries, 2);
  EXPECT_EQ(st.bytes_used, 2 * kFile);
  EXPECT_EQ(st.writes, 2);
  EXPECT_EQ(st.bytes_written, 2 * kFile);
  EXPECT_EQ(st.reads, 1);
  EXPECT_EQ(st.bytes_read, int64_t{kPage});
  EXPECT_EQ(st.read_misses, 1);
  EXPECT_EQ(st.corrupt, 0);
  std::vector<double> reads, writes;
  s->TakeLatencies(&reads, &writes);
  EXPECT_EQ(reads.size(), 1u);
  EXPECT_EQ(writes.size(), 2u);
  s->TakeLatencies(&reads, &writes);
  EXPECT_EQ(reads.size(), 1u);  // taken once
  EXPECT_TRUE(fs::exists(fs::path(s->key_dir()) / "serving_key.txt"));
}

TEST_F(KvDiskStoreTest, AChecksumMismatchIsAMissThatDeletesTheEntry) {
  auto s = Open();
  ASSERT_TRUE(PutBlock(*s, 1));
  ASSERT_TRUE(PutBlock(*s, 2));
  s->Flush();
  {  // one payload bit flipped
    std::fstream f(EntryPath(*s, 1), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(KvDiskStore::kHeaderBytes + 100);
    char c;
    f.read(&c, 1);
    c ^= 4;
    f.seekp(KvDiskStore::kHeaderBytes + 100);
    f.write(&c, 1);
  }
  const Status st = GetBlock(*s, 1);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("page 0 checksum"), std::string::npos) << st.message();
  EXPECT_FALSE(s->Find(HashOf(1)));
  EXPECT_FALSE(fs::exists(EntryPath(*s, 1)));
  EXPECT_EQ(s->stats().corrupt, 1);
  EXPECT_EQ(s->stats().entries, 1);
  EXPECT_EQ(s->stats().bytes_used, kFile);
  {  // and a header bit
    std::fstream f(EntryPath(*s, 2), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(41);
    f.write("\x07", 1);
  }
  EXPECT_EQ(GetBlock(*s, 2).code(), StatusCode::kDataLoss);
  EXPECT_EQ(s->stats().corrupt, 2);
  // A corrupt entry may be written again.
  EXPECT_TRUE(PutBlock(*s, 1));
  s->Flush();
  bool same = false;
  EXPECT_TRUE(GetBlock(*s, 1, 1, &same).ok());
  EXPECT_TRUE(same);
}

TEST_F(KvDiskStoreTest, ATruncatedEntryIsAMiss) {
  auto s = Open();
  ASSERT_TRUE(PutBlock(*s, 1));
  ASSERT_TRUE(PutBlock(*s, 2));
  s->Flush();
  fs::resize_file(EntryPath(*s, 1), kFile - 1);
  const Status st = GetBlock(*s, 1);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
  EXPECT_FALSE(fs::exists(EntryPath(*s, 1)));
  fs::resize_file(EntryPath(*s, 2), 10);  // not even a header
  EXPECT_EQ(GetBlock(*s, 2).code(), StatusCode::kDataLoss);
  EXPECT_EQ(s->stats().corrupt, 2);
  EXPECT_EQ(s->stats().entries, 0);
  // A read into spans of another total length is refused the same way, as
  // an entry of another layout.
  ASSERT_TRUE(PutBlock(*s, 3));
  s->Flush();
  std::vector<uint8_t> small(kPage / 2);
  std::span<uint8_t> out[] = {small};
  EXPECT_EQ(s->Get(HashOf(3), 1, out).code(), StatusCode::kDataLoss);
}

TEST_F(KvDiskStoreTest, EvictsLeastRecentlyUsedWithinCapacity) {
  auto s = Open(3 * kFile);
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(PutBlock(*s, i));
  s->Flush();
  ASSERT_TRUE(GetBlock(*s, 1).ok());  // 1 is now the most recent: 2 goes first
  ASSERT_TRUE(PutBlock(*s, 4));
  s->Flush();
  EXPECT_TRUE(s->Find(HashOf(1)));
  EXPECT_FALSE(s->Find(HashOf(2)));
  EXPECT_FALSE(fs::exists(EntryPath(*s, 2)));
  EXPECT_TRUE(s->Find(HashOf(3)));
  EXPECT_TRUE(s->Find(HashOf(4)));
  // WantsPut of a held block counts as a use too: 3 moves past 1 and 4.
  EXPECT_FALSE(s->WantsPut(HashOf(3), 1));
  ASSERT_TRUE(PutBlock(*s, 5));
  s->Flush();
  EXPECT_FALSE(s->Find(HashOf(1)));
  EXPECT_TRUE(s->Find(HashOf(3)));
  EXPECT_EQ(s->stats().evictions, 2);
  EXPECT_EQ(s->stats().bytes_used, 3 * kFile);
  // An entry larger than the whole capacity is dropped.
  ASSERT_TRUE(PutBlock(*s, 6, 4));
  s->Flush();
  EXPECT_FALSE(s->Find(HashOf(6)));
  EXPECT_EQ(s->stats().writes_dropped, 1);
}

TEST_F(KvDiskStoreTest, MorePagesReplaceFewer) {
  auto s = Open();
  ASSERT_TRUE(PutBlock(*s, 1, 1));
  s->Flush();
  EXPECT_TRUE(s->WantsPut(HashOf(1), 3));
  ASSERT_TRUE(PutBlock(*s, 1, 3));
  s->Flush();
  EXPECT_EQ(s->Find(HashOf(1)), 3u);
  EXPECT_FALSE(fs::exists(EntryPath(*s, 1, 1)));
  EXPECT_FALSE(s->WantsPut(HashOf(1), 1));
  bool same = false;
  ASSERT_TRUE(GetBlock(*s, 1, 3, &same).ok());
  EXPECT_TRUE(same);
  EXPECT_EQ(s->stats().entries, 1);
  EXPECT_EQ(s->stats().bytes_used, int64_t{KvDiskStore::kHeaderBytes + 3 * 8 + 3 * kPage});
  EXPECT_EQ(GetBlock(*s, 1, 4).code(), StatusCode::kNotFound);  // more pages than it holds
}

TEST_F(KvDiskStoreTest, TheFirstPagesAloneAreReadAndChecked) {
  auto s = Open();
  ASSERT_TRUE(PutBlock(*s, 1, 3));
  s->Flush();
  std::vector<uint8_t> page(kPage);
  std::span<uint8_t> out[] = {page};
  ASSERT_TRUE(s->Get(HashOf(1), 1, out).ok());
  const std::vector<uint8_t> all = PayloadOf(1, 3, kPage);
  EXPECT_TRUE(std::equal(page.begin(), page.end(), all.begin()));
  EXPECT_EQ(s->stats().bytes_read, int64_t{kPage});
  {  // the last page corrupted: a read of the first is still whole, a read of all is not
    std::fstream f(EntryPath(*s, 1, 3), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(KvDiskStore::kHeaderBytes + 3 * 8 + 2 * kPage + 7);
    f.write("\x01\x02", 2);
  }
  EXPECT_TRUE(s->Get(HashOf(1), 1, out).ok());
  const Status st = GetBlock(*s, 1, 3);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("page 2 checksum"), std::string::npos) << st.message();
}

TEST_F(KvDiskStoreTest, SurvivesARestartInRecencyOrder) {
  std::string key_dir;
  {
    auto s = Open(3 * kFile);
    for (int i = 1; i <= 3; ++i) ASSERT_TRUE(PutBlock(*s, i));
    key_dir = s->key_dir();
  }  // the destructor writes what is queued
  // Modification times say 2 was used last, then 1, then 3.
  auto set_mtime = [&](int i, int64_t sec) {
    const timespec t[2] = {{sec, 0}, {sec, 0}};
    const BlockHash h = HashOf(i);
    const std::string p = fmt::format("{}/{:016x}{:016x}-p1.kv", key_dir, h.hi, h.lo);
    ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), t, 0), 0);
  };
  set_mtime(3, 1000);
  set_mtime(1, 2000);
  set_mtime(2, 3000);
  // A writer killed mid-write leaves a temporary file; a stray file is left alone.
  std::ofstream(fs::path(key_dir) / ".tmp-deadbeef-7") << "half";
  std::ofstream(fs::path(key_dir) / "README") << "mine";
  auto s = Open(3 * kFile);
  EXPECT_EQ(s->stats().entries, 3);
  EXPECT_FALSE(fs::exists(fs::path(key_dir) / ".tmp-deadbeef-7"));
  EXPECT_TRUE(fs::exists(fs::path(key_dir) / "README"));
  for (int i = 1; i <= 3; ++i) {
    bool same = false;
    EXPECT_TRUE(GetBlock(*s, i, 1, &same).ok()) << i;
    EXPECT_TRUE(same) << i;
  }
  set_mtime(3, 1000);  // the reads touched them; make 3 the oldest again
  auto t = [&] {
    s.reset();
    return Open(2 * kFile);  // a smaller capacity evicts the oldest at start
  }();
  EXPECT_EQ(t->stats().entries, 2);
  EXPECT_FALSE(t->Find(HashOf(3)));
  EXPECT_TRUE(t->Find(HashOf(1)));
}

TEST_F(KvDiskStoreTest, AnotherServingKeyNeverReadsTheseEntries) {
  auto a = Open(int64_t{1} << 30, "model-a|f16");
  ASSERT_TRUE(PutBlock(*a, 1));
  a->Flush();
  auto b = Open(int64_t{1} << 30, "model-a|int8");
  EXPECT_NE(a->key_dir(), b->key_dir());
  EXPECT_FALSE(b->Find(HashOf(1)));
  EXPECT_EQ(GetBlock(*b, 1).code(), StatusCode::kNotFound);
  // Even a file moved into the other key's directory is refused by its header.
  const fs::path other = b->key_dir();
  b.reset();
  fs::copy_file(EntryPath(*a, 1), other / EntryPath(*a, 1).filename());
  b = Open(int64_t{1} << 30, "model-a|int8");
  ASSERT_TRUE(b->Find(HashOf(1)));
  const Status st = GetBlock(*b, 1);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("another serving key"), std::string::npos) << st.message();
  // The original is untouched.
  EXPECT_TRUE(GetBlock(*a, 1).ok());
}

TEST_F(KvDiskStoreTest, AFailedWriteTurnsWritingOffAndReadsGoOn) {
  auto s = Open();
  ASSERT_TRUE(PutBlock(*s, 1));
  s->Flush();
  // Stands for a full or read-only disk (the test runs as root, so no
  // permission bits would stop it): the directory is gone under the writer.
  const fs::path keep = fs::path(dir_) / "kept.kv";
  fs::copy_file(EntryPath(*s, 1), keep);
  fs::remove_all(s->key_dir());
  ASSERT_TRUE(PutBlock(*s, 2));
  s->Flush();
  EXPECT_TRUE(s->stats().writes_disabled);
  EXPECT_FALSE(s->Find(HashOf(2)));
  EXPECT_FALSE(s->WantsPut(HashOf(3), 1));
  EXPECT_FALSE(PutBlock(*s, 3));
  EXPECT_EQ(s->stats().writes_dropped, 2);
  // Reads still work where the entry is still there.
  fs::create_directories(s->key_dir());
  fs::copy_file(keep, EntryPath(*s, 1));
  bool same = false;
  EXPECT_TRUE(GetBlock(*s, 1, 1, &same).ok());
  EXPECT_TRUE(same);
}

TEST_F(KvDiskStoreTest, AFullQueueDropsInsteadOfWaiting) {
  auto s = Open(int64_t{1} << 30, "k", kPage - 1);  // no payload fits
  EXPECT_FALSE(PutBlock(*s, 1));
  s->Flush();
  EXPECT_FALSE(s->Find(HashOf(1)));
  EXPECT_EQ(s->stats().writes_dropped, 1);
}

TEST_F(KvDiskStoreTest, ConcurrentReadersSeeWholeEntriesOrMisses) {
  // A capacity of 16 entries while 64 are written: the writer deletes
  // entries the readers are reading.
  auto s = Open(16 * (KvDiskStore::kHeaderBytes + 2 * 8 + 2 * kPage));
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(PutBlock(*s, i, 2));
  s->Flush();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> hits{0}, wrong{0}, errors{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r)
    readers.emplace_back([&, r] {
      std::mt19937 rng(static_cast<uint32_t>(r));
      while (!stop.load()) {
        const int i = static_cast<int>(rng() % 64);
        bool same = false;
        const Status st = GetBlock(*s, i, 2, &same);
        if (st.ok()) {
          ++hits;
          if (!same) ++wrong;
        } else if (st.code() != StatusCode::kNotFound) {
          ++errors;
        }
      }
    });
  for (int i = 16; i < 64; ++i) {
    while (!PutBlock(*s, i, 2)) std::this_thread::yield();  // the queue is small: wait our turn
    if (i % 8 == 0) s->Flush();
  }
  s->Flush();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(hits.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(s->stats().corrupt, 0);
  EXPECT_EQ(s->stats().entries, 16);
  EXPECT_LE(s->stats().bytes_used, 16 * (KvDiskStore::kHeaderBytes + 2 * 8 + 2 * kPage));
}

TEST(KvDiskEntryNameTest, ParsesOnlyEntryNames) {
  const BlockHash h{0x0123456789abcdefull, 0xfedcba9876543210ull};
  const auto got = ParseKvDiskEntryName("fedcba98765432100123456789abcdef-p6.kv");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->first, h);
  EXPECT_EQ(got->second, 6u);
  for (const char* bad :
       {"fedcba98765432100123456789abcdef-p0.kv", "fedcba98765432100123456789abcdef-p.kv",
        "fedcba9876543210-p1.kv", "FEDCBA98765432100123456789ABCDEF-p1.kv",
        "fedcba98765432100123456789abcdef-p1.kvx", "serving_key.txt"})
    EXPECT_FALSE(ParseKvDiskEntryName(bad)) << bad;
}

}  // namespace
}  // namespace brisk
