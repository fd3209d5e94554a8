#include "model/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "tensor/format_traits.h"

namespace brisk {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
// Limits that keep a corrupt header from asking for absurd allocations.
constexpr uint64_t kMaxStringBytes = 64ull << 20;
constexpr uint64_t kMaxArrayElems = 1ull << 28;
constexpr uint64_t kMaxKv = 1 << 20;
constexpr uint64_t kMaxTensors = 1 << 20;
constexpr uint32_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 4;

// Bounds-checked little-endian cursor over the file image.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return n_ - pos_; }

  template <typename T>
  Status Read(T* out, const char* what) {
    if (n_ - pos_ < sizeof(T))
      return DataLoss("file truncated while reading {} at offset {}", what, pos_);
    std::memcpy(out, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  Status ReadString(std::string* out, const char* what) {
    uint64_t len = 0;
    RETURN_IF_ERROR(Read(&len, what));
    if (len > kMaxStringBytes)
      return DataLoss("{} at offset {} has implausible length {}", what, pos_ - 8, len);
    if (n_ - pos_ < len)
      return DataLoss("file truncated inside {} at offset {} (length {})", what, pos_, len);
    out->assign(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

bool IsValidType(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kFloat64); }

Status ReadValue(Reader& r, GgufType type, GgufValue* v, const std::string& key, int depth);

Status ReadScalar(Reader& r, GgufType type, GgufValue* v, const std::string& key) {
  v->type = type;
  switch (type) {
#define BRISK_INT_CASE(TAG, CTYPE, FIELD)     \
  case GgufType::TAG: {                       \
    CTYPE x;                                  \
    RETURN_IF_ERROR(r.Read(&x, key.c_str())); \
    v->FIELD = x;                             \
    v->i = static_cast<int64_t>(x);           \
    v->u = static_cast<uint64_t>(x);          \
    v->f = static_cast<double>(x);            \
    return Status::Ok();                      \
  }
    BRISK_INT_CASE(kUint8, uint8_t, u)
    BRISK_INT_CASE(kInt8, int8_t, i)
    BRISK_INT_CASE(kUint16, uint16_t, u)
    BRISK_INT_CASE(kInt16, int16_t, i)
    BRISK_INT_CASE(kUint32, uint32_t, u)
    BRISK_INT_CASE(kInt32, int32_t, i)
    BRISK_INT_CASE(kUint64, uint64_t, u)
    BRISK_INT_CASE(kInt64, int64_t, i)
#undef BRISK_INT_CASE
    case GgufType::kFloat32: {
      float x;
      RETURN_IF_ERROR(r.Read(&x, key.c_str()));
      v->f = x;
      return Status::Ok();
    }
    case GgufType::kFloat64: {
      double x;
      RETURN_IF_ERROR(r.Read(&x, key.c_str()));
      v->f = x;
      return Status::Ok();
    }
    case GgufType::kBool: {
      uint8_t x;
      RETURN_IF_ERROR(r.Read(&x, key.c_str()));
      if (x > 1) return DataLoss("metadata '{}': bool value {} is not 0 or 1", key, x);
      v->i = x;
      v->u = x;
      return Status::Ok();
    }
    case GgufType::kString: return r.ReadString(&v->str, key.c_str());
    default: return Internal("unreachable");
  }
}

Status ReadValue(Reader& r, GgufType type, GgufValue* v, const std::string& key, int depth) {
  if (type != GgufType::kArray) return ReadScalar(r, type, v, key);
  if (depth >= kMaxArrayDepth) return DataLoss("metadata '{}': arrays nested too deeply", key);
  v->type = GgufType::kArray;
  uint32_t et = 0;
  uint64_t count = 0;
  RETURN_IF_ERROR(r.Read(&et, key.c_str()));
  if (!IsValidType(et)) return DataLoss("metadata '{}': unknown array element type {}", key, et);
  RETURN_IF_ERROR(r.Read(&count, key.c_str()));
  if (count > kMaxArrayElems)
    return DataLoss("metadata '{}': implausible array length {}", key, count);
  v->elem_type = static_cast<GgufType>(et);
  // Every element takes at least one byte (a string at least its 8-byte
  // length): reject counts the rest of the file cannot hold before allocating.
  uint64_t min_elem = v->elem_type == GgufType::kString  ? 8
                      : v->elem_type == GgufType::kArray ? 12
                                                         : 1;
  if (count > r.remaining() / min_elem)
    return DataLoss("file truncated: metadata '{}' declares {} elements", key, count);
  if (v->elem_type == GgufType::kString) {
    v->str_arr.resize(count);
    for (uint64_t k = 0; k < count; ++k) RETURN_IF_ERROR(r.ReadString(&v->str_arr[k], key.c_str()));
    return Status::Ok();
  }
  v->arr.resize(count);
  for (uint64_t k = 0; k < count; ++k)
    RETURN_IF_ERROR(ReadValue(r, v->elem_type, &v->arr[k], key, depth + 1));
  return Status::Ok();
}

bool IsIntType(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64: return true;
    default: return false;
  }
}

}  // namespace

const char* GgufTypeName(GgufType t) {
  static const char* kNames[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                 "int32",  "float32", "bool",   "string", "array",
                                 "uint64", "int64",   "float64"};
  auto i = static_cast<uint32_t>(t);
  return i < std::size(kNames) ? kNames[i] : "invalid";
}

GgufFile::~GgufFile() {
  if (mapping_) munmap(mapping_, size_);
}

Expected<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return NotFound("model file '{}' does not exist", path);
    return InvalidArgument("cannot open model file '{}': {}", path, std::strerror(err));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("'{}' is not a regular file", path);
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size < 24) {
    ::close(fd);
    return DataLoss("'{}' is too small to be a GGUF file ({} bytes)", path, size);
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return InvalidArgument("cannot mmap '{}': {}", path, std::strerror(errno));
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->mapping_ = map;
  f->base_ = static_cast<const uint8_t*>(map);
  f->size_ = size;
  Status s = f->ParseImpl();
  if (!s.ok()) return s.WithContext(fmt::format("invalid GGUF file '{}'", path));
  return f;
}

Expected<std::unique_ptr<GgufFile>> GgufFile::Parse(std::span<const uint8_t> bytes,
                                                    std::string name) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = std::move(name);
  f->base_ = bytes.data();
  f->size_ = bytes.size();
  Status s = f->ParseImpl();
  if (!s.ok()) return s.WithContext(fmt::format("invalid GGUF file '{}'", f->path_));
  return f;
}

Status GgufFile::ParseImpl() {
  Reader r(base_, size_);
  uint32_t magic = 0;
  RETURN_IF_ERROR(r.Read(&magic, "magic"));
  if (magic != kMagic) return InvalidArgument("bad magic 0x{:08x} (not a GGUF file)", magic);
  RETURN_IF_ERROR(r.Read(&version_, "version"));
  if (version_ != 2 && version_ != 3)
    return Unimplemented("GGUF version {} is not supported (only 2 and 3)", version_);
  uint64_t n_tensors = 0, n_kv = 0;
  RETURN_IF_ERROR(r.Read(&n_tensors, "tensor count"));
  RETURN_IF_ERROR(r.Read(&n_kv, "metadata count"));
  if (n_tensors > kMaxTensors) return DataLoss("implausible tensor count {}", n_tensors);
  if (n_kv > kMaxKv) return DataLoss("implausible metadata count {}", n_kv);

  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key;
    RETURN_IF_ERROR(r.ReadString(&key, "metadata key"));
    uint32_t type = 0;
    RETURN_IF_ERROR(r.Read(&type, "metadata type"));
    if (!IsValidType(type)) return DataLoss("metadata '{}': unknown value type {}", key, type);
    GgufValue v;
    RETURN_IF_ERROR(ReadValue(r, static_cast<GgufType>(type), &v, key, 0));
    if (!kv_.emplace(key, std::move(v)).second) return DataLoss("duplicate metadata key '{}'", key);
  }

  uint64_t alignment = 32;
  if (const GgufValue* a = Find("general.alignment")) {
    if (!IsIntType(a->type) || a->u == 0 || (a->u & (a->u - 1)) != 0 || a->u > (1u << 20))
      return DataLoss("general.alignment must be a power of two, got {}", a->u);
    alignment = a->u;
  }

  // A tensor info takes at least 8 (name) + 4 + 8 + 4 + 8 bytes.
  if (n_tensors > r.remaining() / 32)
    return DataLoss("file truncated: {} tensor infos declared", n_tensors);
  tensors_.resize(n_tensors);
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo& t = tensors_[k];
    RETURN_IF_ERROR(r.ReadString(&t.name, "tensor name"));
    uint32_t n_dims = 0;
    RETURN_IF_ERROR(r.Read(&n_dims, "tensor dims"));
    if (n_dims == 0 || n_dims > kMaxDims)
      return DataLoss("tensor '{}' has {} dimensions (1..{} allowed)", t.name, n_dims, kMaxDims);
    t.dims.resize(n_dims);
    uint64_t n_elem = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = 0;
      RETURN_IF_ERROR(r.Read(&dim, "tensor dim"));
      if (dim == 0 || dim > (1ull << 40) || n_elem > (1ull << 48) / dim)
        return DataLoss("tensor '{}' has an implausible shape", t.name);
      n_elem *= dim;
      t.dims[d] = static_cast<int64_t>(dim);
    }
    RETURN_IF_ERROR(r.Read(&t.ggml_type, "tensor type"));
    RETURN_IF_ERROR(r.Read(&t.offset, "tensor offset"));
    const FormatTraits* format = FindFormat(t.ggml_type);
    if (!format) return Unimplemented("tensor '{}' has unknown type id {}", t.name, t.ggml_type);
    if (t.dims[0] % format->block_size != 0)
      return DataLoss("tensor '{}': row length {} is not a multiple of the {} block size {}",
                      t.name, t.dims[0], format->name, format->block_size);
    t.size_bytes = n_elem / format->block_size * format->block_bytes;
    if (t.offset % alignment != 0)
      return DataLoss("tensor '{}': offset {} is not aligned to {}", t.name, t.offset, alignment);
    if (!tensor_index_.emplace(t.name, k).second)
      return DataLoss("duplicate tensor name '{}'", t.name);
  }

  uint64_t data_start = (r.pos() + alignment - 1) / alignment * alignment;
  if (n_tensors > 0 && data_start > size_)
    return DataLoss("file truncated: data section starts at {} but the file has {} bytes",
                    data_start, size_);
  uint64_t data_size = data_start <= size_ ? size_ - data_start : 0;
  for (auto& t : tensors_) {
    if (t.offset > data_size || t.size_bytes > data_size - t.offset)
      return DataLoss(
          "file truncated: tensor '{}' needs bytes [{}, {}) of the data section, which has {}",
          t.name, t.offset, t.offset + t.size_bytes, data_size);
    t.data = base_ + data_start + t.offset;
  }
  return Status::Ok();
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = kv_.find(std::string(key));
  return it == kv_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
Status WrongType(std::string_view key, const GgufValue& v, const char* want) {
  return InvalidArgument("metadata '{}' has type {}, expected {}", key, GgufTypeName(v.type), want);
}
}  // namespace

Expected<std::string> GgufFile::GetString(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("metadata '{}' is missing", key);
  if (v->type != GgufType::kString) return WrongType(key, *v, "string");
  return v->str;
}

Expected<int64_t> GgufFile::GetInt(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("metadata '{}' is missing", key);
  if (!IsIntType(v->type)) return WrongType(key, *v, "integer");
  if (v->type == GgufType::kUint64 && v->u > static_cast<uint64_t>(INT64_MAX))
    return InvalidArgument("metadata '{}' value {} is out of range", key, v->u);
  return v->i;
}

Expected<double> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("metadata '{}' is missing", key);
  if (v->type != GgufType::kFloat32 && v->type != GgufType::kFloat64 && !IsIntType(v->type))
    return WrongType(key, *v, "float");
  return v->f;
}

Expected<bool> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("metadata '{}' is missing", key);
  if (v->type != GgufType::kBool) return WrongType(key, *v, "bool");
  return v->i != 0;
}

Expected<const std::vector<std::string>*> GgufFile::GetStringArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("metadata '{}' is missing", key);
  if (v->type != GgufType::kArray || v->elem_type != GgufType::kString)
    return WrongType(key, *v, "array of strings");
  return &v->str_arr;
}

Expected<std::vector<int64_t>> GgufFile::GetIntArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("metadata '{}' is missing", key);
  if (v->type != GgufType::kArray || !IsIntType(v->elem_type))
    return WrongType(key, *v, "array of integers");
  std::vector<int64_t> out;
  out.reserve(v->arr.size());
  for (const auto& e : v->arr) out.push_back(e.i);
  return out;
}

Expected<std::vector<float>> GgufFile::GetFloatArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("metadata '{}' is missing", key);
  if (v->type != GgufType::kArray ||
      (v->elem_type != GgufType::kFloat32 && v->elem_type != GgufType::kFloat64))
    return WrongType(key, *v, "array of floats");
  std::vector<float> out;
  out.reserve(v->arr.size());
  for (const auto& e : v->arr) out.push_back(static_cast<float>(e.f));
  return out;
}

Expected<int64_t> GgufFile::GetIntOr(std::string_view key, int64_t def) const {
  if (!Find(key)) return def;
  return GetInt(key);
}
Expected<double> GgufFile::GetFloatOr(std::string_view key, double def) const {
  if (!Find(key)) return def;
  return GetFloat(key);
}
Expected<bool> GgufFile::GetBoolOr(std::string_view key, bool def) const {
  if (!Find(key)) return def;
  return GetBool(key);
}
Expected<std::string> GgufFile::GetStringOr(std::string_view key, std::string def) const {
  if (!Find(key)) return def;
  return GetString(key);
}

}  // namespace brisk
