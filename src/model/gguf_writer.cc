#include "model/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace brisk {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint32_t kVersion = 3;

// Serializes one metadata value (without its type tag) into `out`.
void EncodeValue(const GgufValue& v, std::string* out);

template <typename T>
void Put(std::string* out, T x) {
  out->append(reinterpret_cast<const char*>(&x), sizeof(T));
}

void PutString(std::string* out, const std::string& s) {
  Put<uint64_t>(out, s.size());
  out->append(s);
}

void EncodeScalar(GgufType type, const GgufValue& v, std::string* out) {
  switch (type) {
    case GgufType::kUint8: Put(out, static_cast<uint8_t>(v.u)); break;
    case GgufType::kInt8: Put(out, static_cast<int8_t>(v.i)); break;
    case GgufType::kUint16: Put(out, static_cast<uint16_t>(v.u)); break;
    case GgufType::kInt16: Put(out, static_cast<int16_t>(v.i)); break;
    case GgufType::kUint32: Put(out, static_cast<uint32_t>(v.u)); break;
    case GgufType::kInt32: Put(out, static_cast<int32_t>(v.i)); break;
    case GgufType::kUint64: Put(out, static_cast<uint64_t>(v.u)); break;
    case GgufType::kInt64: Put(out, static_cast<int64_t>(v.i)); break;
    case GgufType::kFloat32: Put(out, static_cast<float>(v.f)); break;
    case GgufType::kFloat64: Put(out, v.f); break;
    case GgufType::kBool: Put(out, static_cast<uint8_t>(v.i != 0)); break;
    case GgufType::kString: PutString(out, v.str); break;
    case GgufType::kArray: EncodeValue(v, out); break;
  }
}

void EncodeValue(const GgufValue& v, std::string* out) {
  if (v.type != GgufType::kArray) {
    EncodeScalar(v.type, v, out);
    return;
  }
  Put<uint32_t>(out, static_cast<uint32_t>(v.elem_type));
  if (v.elem_type == GgufType::kString) {
    Put<uint64_t>(out, v.str_arr.size());
    for (const std::string& s : v.str_arr) PutString(out, s);
    return;
  }
  Put<uint64_t>(out, v.arr.size());
  for (const GgufValue& e : v.arr) EncodeScalar(v.elem_type, e, out);
}

uint64_t PadTo(uint64_t n, uint64_t align) { return (n + align - 1) / align * align; }

}  // namespace

GgufWriter::GgufWriter(std::string path) : path_(std::move(path)), tmp_path_(path_ + ".tmp") {}

GgufWriter::~GgufWriter() {
  if (!finished_) Abort();
}

void GgufWriter::Abort() {
  if (file_) {
    std::fclose(file_);
    file_ = nullptr;
    std::error_code ec;
    std::filesystem::remove(tmp_path_, ec);
  }
}

void GgufWriter::SetValue(const std::string& key, GgufValue value) {
  for (auto& [k, v] : kv_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  kv_.emplace_back(key, std::move(value));
}

void GgufWriter::SetU32(const std::string& key, uint32_t x) {
  GgufValue v;
  v.type = GgufType::kUint32;
  v.u = x;
  v.i = x;
  SetValue(key, std::move(v));
}

void GgufWriter::SetString(const std::string& key, std::string s) {
  GgufValue v;
  v.type = GgufType::kString;
  v.str = std::move(s);
  SetValue(key, std::move(v));
}

void GgufWriter::Remove(const std::string& key) {
  std::erase_if(kv_, [&](const auto& kv) { return kv.first == key; });
}

uint64_t GgufWriter::alignment() const {
  for (const auto& [k, v] : kv_) {
    if (k != "general.alignment") continue;
    uint64_t a = v.type == GgufType::kInt8 || v.type == GgufType::kInt16 ||
                         v.type == GgufType::kInt32 || v.type == GgufType::kInt64
                     ? static_cast<uint64_t>(v.i)
                     : v.u;
    if (a != 0 && (a & (a - 1)) == 0) return a;
  }
  return 32;
}

Status GgufWriter::AddTensor(const std::string& name, std::vector<int64_t> dims, DType type) {
  if (dims.empty() || dims.size() > 4)
    return InvalidArgument("tensor '{}': {} dimensions (1 to 4 allowed)", name, dims.size());
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d <= 0) return InvalidArgument("tensor '{}': dimension {} is not positive", name, d);
    n *= d;
  }
  int64_t row = RowBytes(type, dims[0]);
  if (row < 0)
    return InvalidArgument("tensor '{}': row length {} is not a multiple of {}'s block size", name,
                           dims[0], DTypeName(type));
  const uint64_t size = static_cast<uint64_t>(row) * static_cast<uint64_t>(n / dims[0]);
  tensors_.push_back({name, std::move(dims), type, size});
  return Status::Ok();
}

Status GgufWriter::Write(const void* p, size_t n) {
  if (n == 0) return Status::Ok();
  if (std::fwrite(p, 1, n, file_) != n)
    return InvalidArgument("cannot write '{}': {}", tmp_path_, std::strerror(errno));
  written_ += n;
  return Status::Ok();
}

Status GgufWriter::Pad() {
  static const char kZeros[64] = {};
  uint64_t target = PadTo(written_, alignment());
  while (written_ < target) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(target - written_, sizeof(kZeros)));
    RETURN_IF_ERROR(Write(kZeros, n));
  }
  return Status::Ok();
}

Status GgufWriter::Begin() {
  if (file_ || finished_) return Internal("GgufWriter::Begin called twice");
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (!file_) return InvalidArgument("cannot create '{}': {}", tmp_path_, std::strerror(errno));
  const uint64_t align = alignment();
  std::string head;
  Put<uint32_t>(&head, kMagic);
  Put<uint32_t>(&head, kVersion);
  Put<uint64_t>(&head, tensors_.size());
  Put<uint64_t>(&head, kv_.size());
  for (const auto& [key, v] : kv_) {
    PutString(&head, key);
    Put<uint32_t>(&head, static_cast<uint32_t>(v.type));
    EncodeValue(v, &head);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    PutString(&head, t.name);
    Put<uint32_t>(&head, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) Put<uint64_t>(&head, static_cast<uint64_t>(d));
    Put<uint32_t>(&head, static_cast<uint32_t>(t.type));
    Put<uint64_t>(&head, offset);
    offset += PadTo(t.size_bytes, align);
  }
  RETURN_IF_ERROR(Write(head.data(), head.size()));
  RETURN_IF_ERROR(Pad());
  current_ = 0;
  current_done_ = 0;
  return Status::Ok();
}

Status GgufWriter::Append(std::span<const uint8_t> bytes) {
  if (!file_) return Internal("GgufWriter::Append before Begin");
  while (!bytes.empty()) {
    if (current_ >= tensors_.size())
      return InvalidArgument("more tensor data than the {} declared tensors hold", tensors_.size());
    const Tensor& t = tensors_[current_];
    uint64_t take = std::min<uint64_t>(bytes.size(), t.size_bytes - current_done_);
    RETURN_IF_ERROR(Write(bytes.data(), static_cast<size_t>(take)));
    current_done_ += take;
    bytes = bytes.subspan(static_cast<size_t>(take));
    if (current_done_ == t.size_bytes) {
      RETURN_IF_ERROR(Pad());
      ++current_;
      current_done_ = 0;
    }
  }
  return Status::Ok();
}

Status GgufWriter::Finish() {
  if (!file_) return Internal("GgufWriter::Finish before Begin");
  // Zero-sized tensors cannot occur (dims are positive), so every tensor
  // written in full means current_ ran past the last one.
  if (current_ != tensors_.size())
    return Internal("tensor '{}' was not written in full", tensors_[current_].name);
  if (std::fflush(file_) != 0) {
    Status s = InvalidArgument("cannot write '{}': {}", tmp_path_, std::strerror(errno));
    Abort();
    return s;
  }
  int rc = std::fclose(file_);
  file_ = nullptr;
  std::error_code ec;
  if (rc != 0) {
    std::filesystem::remove(tmp_path_, ec);
    return InvalidArgument("cannot close '{}': {}", tmp_path_, std::strerror(errno));
  }
  std::filesystem::rename(tmp_path_, path_, ec);
  if (ec) {
    std::filesystem::remove(tmp_path_, ec);
    return InvalidArgument("cannot rename '{}' to '{}': {}", tmp_path_, path_, ec.message());
  }
  finished_ = true;
  return Status::Ok();
}

}  // namespace brisk
