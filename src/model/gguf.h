// GGUF (v2/v3) reader over mmap. Every offset, size, shape and type read from
// the file is validated against the file before use; a truncated, corrupt,
// wrong-magic or unsupported file yields one Status naming the problem.
//
// Format facts: little-endian; header = magic "GGUF", u32 version, u64
// tensor_count, u64 kv_count; then kv pairs (gguf string key, u32 value type,
// value); then tensor infos (name, u32 n_dims, u64 dims[n_dims], u32 ggml
// type, u64 offset relative to the data section); the data section starts at
// the next multiple of general.alignment (default 32) after the infos.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace brisk {

enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
const char* GgufTypeName(GgufType t);

// One metadata value. Scalars are widened: integers to int64/uint64, floats to
// double. Arrays hold elements of one type (nested arrays are allowed by the
// format and kept as such).
struct GgufValue {
  GgufType type = GgufType::kUint8;
  GgufType elem_type = GgufType::kUint8;  // for arrays
  int64_t i = 0;                          // signed ints and bools
  uint64_t u = 0;                         // unsigned ints
  double f = 0;                           // floats
  std::string str;
  std::vector<GgufValue> arr;        // arrays of non-strings / nested
  std::vector<std::string> str_arr;  // arrays of strings (tokenizer vocab)
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;      // dims[0] is the contiguous (row) dimension
  uint32_t ggml_type = 0;         // raw ggml type id (see tensor/format_traits.h)
  uint64_t offset = 0;            // relative to the data section
  uint64_t size_bytes = 0;        // validated: offset + size_bytes <= data size
  const uint8_t* data = nullptr;  // points into the mapping
  int64_t n_elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

class GgufFile {
 public:
  // Maps and parses the file. Errors: NotFound, DataLoss (truncated/corrupt),
  // InvalidArgument (bad magic), Unimplemented (version or tensor type).
  static Expected<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses an in-memory image (used by the fuzzer and tests); `bytes` must
  // outlive the returned object.
  static Expected<std::unique_ptr<GgufFile>> Parse(std::span<const uint8_t> bytes,
                                                   std::string name = "<memory>");
  ~GgufFile();

  uint32_t version() const { return version_; }
  const std::string& path() const { return path_; }
  // The whole file's bytes (mapped or given).
  std::span<const uint8_t> bytes() const { return {base_, size_}; }
  const std::map<std::string, GgufValue>& metadata() const { return kv_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  const GgufValue* Find(std::string_view key) const;
  const GgufTensorInfo* FindTensor(std::string_view name) const;

  // Typed getters: NotFound if absent, InvalidArgument if the type is wrong.
  Expected<std::string> GetString(std::string_view key) const;
  Expected<int64_t> GetInt(std::string_view key) const;   // any integer type
  Expected<double> GetFloat(std::string_view key) const;  // any float or int
  Expected<bool> GetBool(std::string_view key) const;
  Expected<const std::vector<std::string>*> GetStringArray(std::string_view key) const;
  Expected<std::vector<int64_t>> GetIntArray(std::string_view key) const;
  Expected<std::vector<float>> GetFloatArray(std::string_view key) const;

  // Defaults when absent (still an error when present with the wrong type).
  Expected<int64_t> GetIntOr(std::string_view key, int64_t def) const;
  Expected<double> GetFloatOr(std::string_view key, double def) const;
  Expected<bool> GetBoolOr(std::string_view key, bool def) const;
  Expected<std::string> GetStringOr(std::string_view key, std::string def) const;

 private:
  GgufFile() = default;
  Status ParseImpl();

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // non-null when we own an mmap
  uint32_t version_ = 0;
  std::map<std::string, GgufValue> kv_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace brisk
