// The disk tier's store: KV blocks as files, named by their block hash,
// bounded by LRU, surviving a restart. Knows nothing of models or KV layouts:
// an entry is a payload of `pages` equal pages of bytes (engine/kv_disk_tier.h
// gives them meaning: a block's own page, then its local pages).
//
// Layout: <dir>/<serving key id>/<block hash>-p<pages>.kv, one file per
// block. The serving key id is a hash of everything that changes what a
// block's bytes mean (model file, weight precision, KV precision, RoPE
// scaling, KV layout, engine version; the text is kept beside the entries in
// serving_key.txt), so a changed configuration opens an empty directory of
// its own and never reads stale KV. Each file starts with a header (magic,
// format version, the serving key hash, the block hash, the page count, the
// payload length, the XXH3-64 of the page checksum table, and the header's
// own XXH3-64), then the table (each page's XXH3-64), then the pages. Per-page
// checksums let a reader take only the first pages of an entry (a block
// outside a sliding window needs only its own page) and still check all it
// reads. A file is written under a temporary name and renamed into place, so
// a reader sees a whole entry or none; a process killed mid-write leaves only
// a temporary file, removed at the next start. There is no fsync: a power
// loss may leave a renamed file with lost data, which the checksums catch
// like any other corruption.
//
// Reads verify the header and the checksums; a missing entry is a miss, and a
// truncated or corrupt one is a miss that is logged, counted and deleted.
// Writes go through a bounded queue to one writer thread, so whoever calls
// Put() never waits on the disk: a full queue drops the write (counted). A
// write that fails (ENOSPC, EROFS, EACCES, any error) turns writing off for
// the life of the process, logged once and shown in stats().writes_disabled;
// reads go on.
//
// The index (hash -> pages, bytes, recency) is in memory, rebuilt at Open()
// by listing the directory, oldest modification time first. A read touches
// the file's mtime, so the order survives a restart. Entries past
// capacity_bytes are deleted least recently used first. One process per
// directory: two would each bound only what they index.
//
// Thread-safe: Find, Match, Get, Put and stats may be called from any
// thread at once. A reader racing the writer's deletion of the same entry
// gets a miss or the whole old file (an open file outlives its unlink).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/block_hash.h"
#include "util/status.h"

namespace brisk {

struct KvDiskStoreOptions {
  std::string dir;                            // cache.disk_path
  int64_t capacity_bytes = int64_t{1} << 30;  // cache.disk_bytes: files, headers included
  std::string serving_key;                    // what the bytes mean; its hash names the directory
  int64_t write_queue_bytes = int64_t{256} << 20;  // payloads waiting for the writer
};

// Counters since Open(), and the state now.
struct KvDiskStats {
  bool enabled = false;          // a store is open
  bool writes_disabled = false;  // a write failed: RAM only from then on
  int64_t entries = 0, bytes_used = 0;
  int64_t reads = 0, read_misses = 0, corrupt = 0;  // corrupt: truncated or bad checksum
  int64_t bytes_read = 0;
  int64_t writes = 0, bytes_written = 0;
  int64_t writes_dropped = 0;  // queue full or writes disabled
  int64_t evictions = 0;       // entries deleted for capacity
};

class KvDiskStore {
 public:
  static constexpr size_t kHeaderBytes = 72;

  // Creates the key's directory if needed and indexes what it holds.
  // Errors: the directory cannot be created or listed (the caller then
  // serves from RAM only).
  static Expected<std::unique_ptr<KvDiskStore>> Open(const KvDiskStoreOptions& options);
  // Writes what is queued, then stops the writer.
  ~KvDiskStore();
  KvDiskStore(const KvDiskStore&) = delete;
  KvDiskStore& operator=(const KvDiskStore&) = delete;

  // The directory entries live in: <dir>/<serving key id>.
  const std::string& key_dir() const { return key_dir_; }
  // The page count of the entry holding `h`, if any (no I/O).
  std::optional<uint32_t> Find(const BlockHash& h) const;
  // How many of `hashes`, from the first, have an entry (no I/O).
  int32_t Match(std::span<const BlockHash> hashes) const;
  // Whether Put(h, pages, ...) would queue a write: writes are on and no
  // entry of h holds as many pages. Lets a caller skip copying the payload.
  // An entry already holding as many pages counts as just used (LRU).
  bool WantsPut(const BlockHash& h, uint32_t pages);
  // Queues an entry of `pages` pages (size / pages bytes each) for the
  // writer; an entry of h with fewer pages is replaced. False: dropped
  // (queue full, writes off, not whole pages, or not wanted).
  bool Put(const BlockHash& h, uint32_t pages, std::unique_ptr<uint8_t[]> payload, size_t size);
  // Reads the first `pages` pages of the entry of h into `out` (spans that
  // together are exactly those pages, in order), checking them. NotFound:
  // no entry, or one of fewer pages; DataLoss: truncated, corrupt or of
  // another page size (then logged and deleted). On error `out` holds
  // garbage.
  Status Get(const BlockHash& h, uint32_t pages, std::span<const std::span<uint8_t>> out);
  // Blocks until every queued write is done (tests, shutdown).
  void Flush();

  KvDiskStats stats() const;
  // Seconds each Get and each write took since the last call (at most 4096
  // of each are kept between calls).
  void TakeLatencies(std::vector<double>* read_s, std::vector<double>* write_s);

 private:
  struct Entry {
    uint32_t pages = 0;
    int64_t bytes = 0;                       // the file's size
    std::list<BlockHash>::iterator recency;  // in lru_, least recent first
  };
  struct Pending {
    BlockHash hash;
    uint32_t pages;
    std::unique_ptr<uint8_t[]> payload;
    size_t size;
  };

  explicit KvDiskStore(const KvDiskStoreOptions& options, std::string key_dir);
  Status Scan();
  std::string PathOf(const BlockHash& h, uint32_t pages) const;
  void WriterLoop();
  void Write(Pending& p);
  void DisableWrites(const std::string& why);
  void Drop(const BlockHash& h, uint32_t pages, const char* why, int64_t* counter);
  void Touch(Entry& e, const BlockHash& h);
  void AddEntry(const BlockHash& h, uint32_t pages, int64_t bytes);
  void EraseEntry(std::unordered_map<BlockHash, Entry, BlockHashOf>::iterator it);
  void NoteLatency(std::vector<double>* v, double s);

  KvDiskStoreOptions opts_;
  std::string key_dir_;
  BlockHash key_hash_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // the writer waits for work, Flush() for an empty queue
  std::unordered_map<BlockHash, Entry, BlockHashOf> index_;
  std::list<BlockHash> lru_;
  std::deque<Pending> queue_;
  int64_t queued_bytes_ = 0;
  bool writing_ = false;  // the writer holds a Pending outside the queue
  bool stop_ = false;
  uint64_t tmp_counter_ = 0;
  KvDiskStats stats_;
  std::vector<double> read_s_, write_s_;
  std::thread writer_;
};

// The page count of an entry file's name "<hash>-p<pages>.kv", and its hash;
// nullopt for any other name.
std::optional<std::pair<BlockHash, uint32_t>> ParseKvDiskEntryName(std::string_view name);

}  // namespace brisk
