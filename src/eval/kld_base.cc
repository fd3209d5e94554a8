#include "eval/kld_base.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include "eval/kld_stats.h"

namespace brisk::eval {

namespace {

constexpr char kMagic[8] = {'B', 'R', 'I', 'S', 'K', 'K', 'L', 'D'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kNoBos = 0xFFFFFFFFu;
constexpr uint32_t kMaxDescription = 1 << 20;

bool WriteU32(std::FILE* f, uint32_t v) { return std::fwrite(&v, 4, 1, f) == 1; }
bool ReadU32(std::FILE* f, uint32_t* v) { return std::fread(v, 4, 1, f) == 1; }

int64_t RowBytes(int vocab) { return 8 + 2 * int64_t{vocab}; }

}  // namespace

Expected<std::unique_ptr<KldBaseWriter>> KldBaseWriter::Create(const std::string& path,
                                                               const KldBaseHeader& h) {
  std::unique_ptr<KldBaseWriter> w(new KldBaseWriter());
  w->path_ = path;
  w->tmp_ = path + ".tmp";
  w->f_ = std::fopen(w->tmp_.c_str(), "wb");
  if (w->f_ == nullptr)
    return InvalidArgument("cannot write '{}': {}", w->tmp_, std::strerror(errno));
  w->vocab_ = h.vocab;
  w->rows_left_ = h.chunks.scored();
  w->q_.resize(static_cast<size_t>(h.vocab));
  const TextChunks& c = h.chunks;
  bool ok =
      std::fwrite(kMagic, 1, 8, w->f_) == 8 && WriteU32(w->f_, kVersion) &&
      WriteU32(w->f_, static_cast<uint32_t>(h.vocab)) &&
      WriteU32(w->f_, static_cast<uint32_t>(c.n_ctx)) &&
      WriteU32(w->f_, static_cast<uint32_t>(c.n_chunks)) &&
      WriteU32(w->f_, c.bos ? static_cast<uint32_t>(*c.bos) : kNoBos) &&
      WriteU32(w->f_, static_cast<uint32_t>(h.description.size())) &&
      std::fwrite(h.description.data(), 1, h.description.size(), w->f_) == h.description.size() &&
      std::fwrite(c.tokens.data(), 4, c.tokens.size(), w->f_) == c.tokens.size();
  if (!ok) return InvalidArgument("cannot write '{}': {}", w->tmp_, std::strerror(errno));
  return w;
}

KldBaseWriter::~KldBaseWriter() {
  if (f_ != nullptr) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

Status KldBaseWriter::Append(const float* log_probs) {
  if (rows_left_ <= 0) return Internal("more rows than the header announces");
  float min = 0, step = 0;
  PackLogProbs(log_probs, vocab_, &min, &step, q_.data());
  if (std::fwrite(&min, 4, 1, f_) != 1 || std::fwrite(&step, 4, 1, f_) != 1 ||
      std::fwrite(q_.data(), 2, q_.size(), f_) != q_.size())
    return InvalidArgument("cannot write '{}': {}", tmp_, std::strerror(errno));
  --rows_left_;
  return Status::Ok();
}

Status KldBaseWriter::Finish() {
  if (rows_left_ != 0) return Internal("{} rows missing from the base", rows_left_);
  const bool ok = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!ok) return InvalidArgument("cannot write '{}': {}", tmp_, std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) return InvalidArgument("cannot rename '{}' to '{}': {}", tmp_, path_, ec.message());
  return Status::Ok();
}

Expected<std::unique_ptr<KldBaseReader>> KldBaseReader::Open(const std::string& path) {
  std::unique_ptr<KldBaseReader> r(new KldBaseReader());
  r->path_ = path;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return NotFound("cannot read the base '{}': {}", path, ec.message());
  r->f_ = std::fopen(path.c_str(), "rb");
  if (r->f_ == nullptr) return NotFound("cannot read '{}': {}", path, std::strerror(errno));
  char magic[8];
  uint32_t version = 0, vocab = 0, n_ctx = 0, n_chunks = 0, bos = 0, dlen = 0;
  if (std::fread(magic, 1, 8, r->f_) != 8 || std::memcmp(magic, kMagic, 8) != 0)
    return InvalidArgument("'{}' is not a brisk eval kld base (made by --save-base)", path);
  if (!ReadU32(r->f_, &version) || version != kVersion)
    return InvalidArgument("'{}': base version {} is not {}", path, version, kVersion);
  if (!ReadU32(r->f_, &vocab) || !ReadU32(r->f_, &n_ctx) || !ReadU32(r->f_, &n_chunks) ||
      !ReadU32(r->f_, &bos) || !ReadU32(r->f_, &dlen))
    return DataLoss("'{}' is truncated (header)", path);
  if (vocab == 0 || vocab > (1u << 24) || n_ctx < 16 || n_ctx > (1u << 20) || n_chunks == 0 ||
      n_chunks > (1u << 20) || dlen > kMaxDescription)
    return DataLoss("'{}' has an implausible header (vocab {}, n_ctx {}, chunks {})", path, vocab,
                    n_ctx, n_chunks);
  KldBaseHeader& h = r->header_;
  h.vocab = static_cast<int>(vocab);
  h.chunks.n_ctx = static_cast<int>(n_ctx);
  h.chunks.n_chunks = static_cast<int>(n_chunks);
  if (bos != kNoBos) h.chunks.bos = static_cast<int32_t>(bos);
  const int64_t expected = 8 + 4 * 6 + int64_t{dlen} + 4 * int64_t{n_ctx} * n_chunks +
                           h.chunks.scored() * RowBytes(h.vocab);
  if (static_cast<int64_t>(size) != expected)
    return DataLoss("'{}' is {} bytes; its header says {} (truncated or not a whole base)", path,
                    size, expected);
  h.description.resize(dlen);
  h.chunks.tokens.resize(static_cast<size_t>(n_ctx) * n_chunks);
  if (std::fread(h.description.data(), 1, dlen, r->f_) != dlen ||
      std::fread(h.chunks.tokens.data(), 4, h.chunks.tokens.size(), r->f_) !=
          h.chunks.tokens.size())
    return DataLoss("'{}' is truncated (tokens)", path);
  for (int32_t t : h.chunks.tokens)
    if (t < 0 || t >= h.vocab) return DataLoss("'{}' holds token {} outside the vocab", path, t);
  r->rows_left_ = h.chunks.scored();
  r->q_.resize(vocab);
  return r;
}

KldBaseReader::~KldBaseReader() {
  if (f_ != nullptr) std::fclose(f_);
}

Status KldBaseReader::Next(float* log_probs) {
  if (rows_left_ <= 0) return Internal("read past the base's last row");
  float min = 0, step = 0;
  if (std::fread(&min, 4, 1, f_) != 1 || std::fread(&step, 4, 1, f_) != 1 ||
      std::fread(q_.data(), 2, q_.size(), f_) != q_.size())
    return DataLoss("'{}' is truncated (log-probs)", path_);
  if (!std::isfinite(min) || !std::isfinite(step) || step < 0)
    return DataLoss("'{}' holds a corrupt row", path_);
  UnpackLogProbs(min, step, q_.data(), header_.vocab, log_probs);
  --rows_left_;
  return Status::Ok();
}

}  // namespace brisk::eval
