#include "engine/kv_disk_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "util/log.h"

namespace brisk {

namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

constexpr uint32_t kMagic = 0x31564b42;  // "BKV1"
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kMaxLatencies = 4096;
constexpr const char* kTmpPrefix = ".tmp-";

// The header's fields, little-endian at fixed offsets (kHeaderBytes in all);
// the last 8 bytes are the XXH3-64 of the ones before. The table that
// follows holds each page's XXH3-64; table_xxh3 is the table's.
struct Header {
  BlockHash key, hash;
  uint32_t pages = 0;
  uint64_t payload_bytes = 0, table_xxh3 = 0;
};

void Put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void Put64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t Get32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void EncodeHeader(const Header& h, uint8_t* out) {
  std::memset(out, 0, KvDiskStore::kHeaderBytes);
  Put32(out + 0, kMagic);
  Put32(out + 4, kFormatVersion);
  Put64(out + 8, h.key.lo);
  Put64(out + 16, h.key.hi);
  Put64(out + 24, h.hash.lo);
  Put64(out + 32, h.hash.hi);
  Put32(out + 40, h.pages);
  Put64(out + 48, h.payload_bytes);
  Put64(out + 56, h.table_xxh3);
  Put64(out + 64, XXH3_64bits(out, 64));
}

// Empty when the header says what `want` says; else what differs.
std::string CheckHeader(const uint8_t* in, const Header& want) {
  if (Get32(in) != kMagic) return "not a KV block file (bad magic)";
  if (Get32(in + 4) != kFormatVersion) return fmt::format("format version {}", Get32(in + 4));
  if (Get64(in + 64) != XXH3_64bits(in, 64)) return "header checksum mismatch";
  if (Get64(in + 8) != want.key.lo || Get64(in + 16) != want.key.hi)
    return "written under another serving key";
  if (Get64(in + 24) != want.hash.lo || Get64(in + 32) != want.hash.hi)
    return "holds another block hash";
  if (Get32(in + 40) != want.pages) return fmt::format("holds {} pages", Get32(in + 40));
  if (want.payload_bytes % want.pages != 0) return "payload not whole pages";
  if (Get64(in + 48) != want.payload_bytes)
    return fmt::format("payload of {} bytes, expected {}", Get64(in + 48), want.payload_bytes);
  return {};
}

// Empty when each page_bytes-long page of `data` (spans in order, which
// need not align with pages) has its checksum in `table`; else which not.
std::string CheckPages(std::span<const std::span<uint8_t>> data, uint64_t page_bytes,
                       const uint8_t* table) {
  XXH3_state_t* x = XXH3_createState();
  XXH3_64bits_reset(x);
  uint64_t page = 0, filled = 0;
  std::string bad;
  for (const auto& s : data) {
    size_t at = 0;
    while (at < s.size() && bad.empty()) {
      const size_t n = std::min<uint64_t>(s.size() - at, page_bytes - filled);
      XXH3_64bits_update(x, s.data() + at, n);
      at += n;
      filled += n;
      if (filled == page_bytes) {
        if (XXH3_64bits_digest(x) != Get64(table + 8 * page))
          bad = fmt::format("page {} checksum mismatch", page);
        ++page;
        filled = 0;
        XXH3_64bits_reset(x);
      }
    }
  }
  XXH3_freeState(x);
  return bad;
}

// Reads or writes all of `iov` at `offset` (short transfers resumed).
// False with errno set on error; a read reaching the end of the file early
// sets errno to 0.
bool TransferAll(int fd, std::vector<iovec> iov, off_t offset, bool write) {
  size_t first = 0;
  while (first < iov.size()) {
    const int n = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
    const ssize_t got = write ? pwritev(fd, iov.data() + first, n, offset)
                              : preadv(fd, iov.data() + first, n, offset);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (got == 0) {
      errno = 0;
      return false;
    }
    offset += got;
    size_t left = static_cast<size_t>(got);
    while (left > 0 && first < iov.size()) {
      if (left >= iov[first].iov_len) {
        left -= iov[first].iov_len;
        ++first;
      } else {
        iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
        left = 0;
      }
    }
    while (first < iov.size() && iov[first].iov_len == 0) ++first;
  }
  return true;
}

double SecondsSince(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

std::string HashHex(const BlockHash& h) { return fmt::format("{:016x}{:016x}", h.hi, h.lo); }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::optional<std::pair<BlockHash, uint32_t>> ParseKvDiskEntryName(std::string_view name) {
  // <32 hex>-p<digits>.kv
  if (name.size() < 32 + 2 + 1 + 3 || name.substr(32, 2) != "-p" || !name.ends_with(".kv"))
    return std::nullopt;
  uint64_t half[2] = {0, 0};
  for (int i = 0; i < 32; ++i) {
    const int d = HexDigit(name[static_cast<size_t>(i)]);
    if (d < 0) return std::nullopt;
    half[i / 16] = half[i / 16] << 4 | static_cast<uint64_t>(d);
  }
  const std::string_view digits = name.substr(34, name.size() - 34 - 3);
  if (digits.empty() || digits.size() > 6) return std::nullopt;
  uint32_t pages = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    pages = pages * 10 + static_cast<uint32_t>(c - '0');
  }
  if (pages == 0) return std::nullopt;
  return std::pair{BlockHash{half[1], half[0]}, pages};
}

Expected<std::unique_ptr<KvDiskStore>> KvDiskStore::Open(const KvDiskStoreOptions& options) {
  if (options.dir.empty()) return InvalidArgument("the KV disk tier needs a directory");
  const XXH128_hash_t k = XXH3_128bits(options.serving_key.data(), options.serving_key.size());
  const BlockHash key{k.low64, k.high64};
  const std::string key_dir = (fs::path(options.dir) / HashHex(key)).string();
  std::error_code ec;
  fs::create_directories(key_dir, ec);
  if (ec)
    return Status(StatusCode::kUnavailable, fmt::format("creating {}: {}", key_dir, ec.message()));
  std::unique_ptr<KvDiskStore> s(new KvDiskStore(options, key_dir));
  s->key_hash_ = key;
  RETURN_IF_ERROR(s->Scan());
  // For people looking at the directory; the hash in each header is what counts.
  const fs::path note = fs::path(key_dir) / "serving_key.txt";
  if (!fs::exists(note, ec)) std::ofstream(note) << options.serving_key << "\n";
  s->writer_ = std::thread([p = s.get()] { p->WriterLoop(); });
  return s;
}

KvDiskStore::KvDiskStore(const KvDiskStoreOptions& options, std::string key_dir)
    : opts_(options), key_dir_(std::move(key_dir)) {
  stats_.enabled = true;
}

KvDiskStore::~KvDiskStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

std::string KvDiskStore::PathOf(const BlockHash& h, uint32_t pages) const {
  return fmt::format("{}/{}-p{}.kv", key_dir_, HashHex(h), pages);
}

// The index from the directory: entries oldest-modified first; leftovers of
// a killed writer, and the smaller of two entries of one hash (killed
// between a rename and the unlink of the entry it replaced), are deleted.
Status KvDiskStore::Scan() {
  struct Found {
    BlockHash hash;
    uint32_t pages;
    int64_t bytes;
    int64_t mtime_ns;
  };
  std::vector<Found> found;
  std::error_code ec;
  fs::directory_iterator it(key_dir_, ec), end;
  if (ec)
    return Status(StatusCode::kUnavailable, fmt::format("listing {}: {}", key_dir_, ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec)
      return Status(StatusCode::kUnavailable,
                    fmt::format("listing {}: {}", key_dir_, ec.message()));
    const std::string name = it->path().filename().string();
    if (name.starts_with(kTmpPrefix)) {
      fs::remove(it->path(), ec);
      continue;
    }
    const auto parsed = ParseKvDiskEntryName(name);
    struct stat st;
    if (!parsed || ::stat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    found.push_back({parsed->first, parsed->second, static_cast<int64_t>(st.st_size),
                     int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec});
  }
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime_ns < b.mtime_ns; });
  std::lock_guard<std::mutex> lock(mu_);
  for (const Found& f : found) {
    auto have = index_.find(f.hash);
    if (have != index_.end()) {
      const bool keep_new = f.pages > have->second.pages;
      const uint32_t loser = keep_new ? have->second.pages : f.pages;
      ::unlink(PathOf(f.hash, loser).c_str());
      if (!keep_new) continue;
      EraseEntry(have);
    }
    AddEntry(f.hash, f.pages, f.bytes);
  }
  while (stats_.bytes_used > opts_.capacity_bytes && !lru_.empty()) {
    auto victim = index_.find(lru_.front());
    ::unlink(PathOf(victim->first, victim->second.pages).c_str());
    EraseEntry(victim);
    ++stats_.evictions;
  }
  return Status::Ok();
}

void KvDiskStore::AddEntry(const BlockHash& h, uint32_t pages, int64_t bytes) {
  lru_.push_back(h);
  index_[h] = Entry{pages, bytes, std::prev(lru_.end())};
  stats_.bytes_used += bytes;
  stats_.entries = static_cast<int64_t>(index_.size());
}

void KvDiskStore::EraseEntry(std::unordered_map<BlockHash, Entry, BlockHashOf>::iterator it) {
  stats_.bytes_used -= it->second.bytes;
  lru_.erase(it->second.recency);
  index_.erase(it);
  stats_.entries = static_cast<int64_t>(index_.size());
}

void KvDiskStore::Touch(Entry& e, const BlockHash& h) {
  lru_.erase(e.recency);
  lru_.push_back(h);
  e.recency = std::prev(lru_.end());
}

void KvDiskStore::NoteLatency(std::vector<double>* v, double s) {
  if (v->size() < kMaxLatencies) v->push_back(s);
}

std::optional<uint32_t> KvDiskStore::Find(const BlockHash& h) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(h);
  if (it == index_.end()) return std::nullopt;
  return it->second.pages;
}

int32_t KvDiskStore::Match(std::span<const BlockHash> hashes) const {
  std::lock_guard<std::mutex> lock(mu_);
  int32_t n = 0;
  for (const BlockHash& h : hashes) {
    if (!index_.count(h)) break;
    ++n;
  }
  return n;
}

bool KvDiskStore::WantsPut(const BlockHash& h, uint32_t pages) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(h); it != index_.end() && it->second.pages >= pages) {
    Touch(it->second, h);
    return false;
  }
  if (stats_.writes_disabled || stop_ || queued_bytes_ >= opts_.write_queue_bytes) {
    ++stats_.writes_dropped;
    return false;
  }
  return true;
}

bool KvDiskStore::Put(const BlockHash& h, uint32_t pages, std::unique_ptr<uint8_t[]> payload,
                      size_t size) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(h); it != index_.end() && it->second.pages >= pages) return false;
    const int64_t bytes = static_cast<int64_t>(size);
    if (pages == 0 || size % pages != 0 || stats_.writes_disabled || stop_ ||
        queued_bytes_ + bytes > opts_.write_queue_bytes) {
      ++stats_.writes_dropped;
      return false;
    }
    queued_bytes_ += bytes;
    queue_.push_back({h, pages, std::move(payload), size});
  }
  cv_.notify_all();
  return true;
}

void KvDiskStore::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

Status KvDiskStore::Get(const BlockHash& h, uint32_t pages,
                        std::span<const std::span<uint8_t>> out) {
  const auto t0 = SteadyClock::now();
  Header want;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(h);
    if (it == index_.end() || it->second.pages < pages || pages == 0) {
      ++stats_.read_misses;
      return NotFound("no entry of {} pages or more", pages);
    }
    want.pages = it->second.pages;
  }
  const std::string path = PathOf(h, want.pages);
  want.key = key_hash_;
  want.hash = h;
  uint64_t wanted_bytes = 0;
  for (const auto& s : out) wanted_bytes += s.size();
  const uint64_t page_bytes = wanted_bytes / pages;
  const uint64_t table_at = kHeaderBytes, payload_at = kHeaderBytes + 8 * uint64_t{want.pages};
  want.payload_bytes = page_bytes * want.pages;

  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {  // deleted under us (LRU, or by hand): a miss
    const int err = errno;
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.read_misses;
    if (err == ENOENT)
      if (auto it = index_.find(h); it != index_.end() && it->second.pages == want.pages)
        EraseEntry(it);
    return NotFound("{}: {}", path, std::strerror(err));
  }
  std::string bad;
  std::vector<uint8_t> head(payload_at);
  struct stat st;
  if (wanted_bytes % pages != 0) {
    bad = "read into spans that are not whole pages";
  } else if (::fstat(fd, &st) != 0) {
    bad = fmt::format("fstat: {}", std::strerror(errno));
  } else if (static_cast<uint64_t>(st.st_size) != payload_at + want.payload_bytes) {
    bad = fmt::format("{} bytes, expected {} (truncated or of another layout)", st.st_size,
                      payload_at + want.payload_bytes);
  } else {
    // The header and the page checksums, then only the pages asked for.
    std::vector<iovec> iov = {{head.data(), head.size()}};
    if (!TransferAll(fd, iov, 0, false)) {
      bad = errno ? fmt::format("read: {}", std::strerror(errno)) : "truncated while read";
    } else if (bad = CheckHeader(head.data(), want); !bad.empty()) {
    } else if (XXH3_64bits(head.data() + table_at, 8 * want.pages) != Get64(head.data() + 56)) {
      bad = "page checksum table mismatch";
    } else {
      iov.clear();
      for (const auto& s : out) iov.push_back({s.data(), s.size()});
      if (!TransferAll(fd, std::move(iov), static_cast<off_t>(payload_at), false))
        bad = errno ? fmt::format("read: {}", std::strerror(errno)) : "truncated while read";
      else
        bad = CheckPages(out, page_bytes, head.data() + table_at);
    }
  }
  if (bad.empty()) ::futimens(fd, nullptr);  // recency that survives a restart
  ::close(fd);

  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(h);
  const bool same = it != index_.end() && it->second.pages == want.pages;
  if (!bad.empty()) {
    log::Warn("KV disk tier: skipping {}: {}; the block is recomputed", path, bad);
    ::unlink(path.c_str());
    if (same) EraseEntry(it);
    ++stats_.corrupt;
    return DataLoss("{}: {}", path, bad);
  }
  if (same) Touch(it->second, h);
  ++stats_.reads;
  stats_.bytes_read += static_cast<int64_t>(wanted_bytes);
  NoteLatency(&read_s_, SecondsSince(t0));
  return Status::Ok();
}

void KvDiskStore::WriterLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything is written
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    const int64_t size = static_cast<int64_t>(p.size);
    Write(p);
    p.payload.reset();
    lock.lock();
    writing_ = false;
    queued_bytes_ -= size;
    cv_.notify_all();
  }
}

void KvDiskStore::DisableWrites(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stats_.writes_disabled) return;
  stats_.writes_disabled = true;
  log::Warn("KV disk tier: {}; writes are off from now on (RAM prefix cache only, reads go on)",
            why);
}

void KvDiskStore::Write(Pending& p) {
  const auto t0 = SteadyClock::now();
  const int64_t bytes = static_cast<int64_t>(kHeaderBytes + 8 * p.pages + p.size);
  std::vector<std::string> evicted;
  uint64_t n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto have = index_.find(p.hash);
    if (have != index_.end() && have->second.pages >= p.pages) return;
    if (stats_.writes_disabled || bytes > opts_.capacity_bytes) {
      ++stats_.writes_dropped;
      return;
    }
    // Room first, least recently used first (never the entry this replaces:
    // it goes once the new one is in place).
    const int64_t replaced = have != index_.end() ? have->second.bytes : 0;
    while (stats_.bytes_used - replaced + bytes > opts_.capacity_bytes) {
      auto victim = index_.find(lru_.front());
      if (victim == have) victim = index_.find(*std::next(lru_.begin()));
      evicted.push_back(PathOf(victim->first, victim->second.pages));
      EraseEntry(victim);
      ++stats_.evictions;
    }
    n = tmp_counter_++;
  }
  for (const std::string& path : evicted) ::unlink(path.c_str());

  Header h;
  h.key = key_hash_;
  h.hash = p.hash;
  h.pages = p.pages;
  h.payload_bytes = p.size;
  std::vector<uint8_t> head(kHeaderBytes + 8 * p.pages);
  const size_t page_bytes = p.size / p.pages;
  for (uint32_t i = 0; i < p.pages; ++i)
    Put64(head.data() + kHeaderBytes + 8 * i,
          XXH3_64bits(p.payload.get() + i * page_bytes, page_bytes));
  h.table_xxh3 = XXH3_64bits(head.data() + kHeaderBytes, 8 * p.pages);
  EncodeHeader(h, head.data());
  const std::string path = PathOf(p.hash, p.pages);
  const std::string tmp = fmt::format("{}/{}{}-{}", key_dir_, kTmpPrefix, HashHex(p.hash), n);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    DisableWrites(fmt::format("creating {}: {}", tmp, std::strerror(errno)));
    return;
  }
  std::vector<iovec> iov = {{head.data(), head.size()}, {p.payload.get(), p.size}};
  bool ok = TransferAll(fd, std::move(iov), 0, true);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    DisableWrites(fmt::format("writing {}: {}", path, std::strerror(err)));
    return;
  }
  std::string old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto have = index_.find(p.hash); have != index_.end()) {
      if (have->second.pages != p.pages) old = PathOf(p.hash, have->second.pages);
      EraseEntry(have);
    }
    AddEntry(p.hash, p.pages, bytes);
    ++stats_.writes;
    stats_.bytes_written += bytes;
    NoteLatency(&write_s_, SecondsSince(t0));
  }
  if (!old.empty()) ::unlink(old.c_str());
}

KvDiskStats KvDiskStore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void KvDiskStore::TakeLatencies(std::vector<double>* read_s, std::vector<double>* write_s) {
  std::lock_guard<std::mutex> lock(mu_);
  read_s->insert(read_s->end(), read_s_.begin(), read_s_.end());
  write_s->insert(write_s->end(), write_s_.begin(), write_s_.end());
  read_s_.clear();
  write_s_.clear();
}

}  // namespace brisk
