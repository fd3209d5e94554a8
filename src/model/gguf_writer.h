// GGUF v3 writer that streams tensor data to disk: the header, metadata and
// tensor infos are written first (every tensor's type and shape must be known
// up front), then each tensor's bytes in the order the tensors were added,
// each padded to the file's alignment. Nothing but the current chunk is held
// in memory.
//
// The file is written to "<path>.tmp" and renamed to <path> by Finish(); a
// writer destroyed before Finish() removes the temporary file, so a failed
// run leaves no half-written output.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/gguf.h"
#include "tensor/format_traits.h"
#include "util/status.h"

namespace brisk {

class GgufWriter {
 public:
  explicit GgufWriter(std::string path);
  ~GgufWriter();
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // Metadata, written in the order added. A key added twice replaces the
  // first value. general.alignment (an integer power of two), when present,
  // sets the data alignment (default 32).
  void SetValue(const std::string& key, GgufValue value);
  void SetU32(const std::string& key, uint32_t v);
  void SetString(const std::string& key, std::string v);
  void Remove(const std::string& key);

  // Declares the next tensor; dims[0] is the row length and must be a
  // multiple of the type's block size (InvalidArgument otherwise).
  Status AddTensor(const std::string& name, std::vector<int64_t> dims, DType type);
  uint64_t TensorBytes(size_t index) const { return tensors_[index].size_bytes; }

  // Creates <path>.tmp and writes header, metadata and tensor infos.
  Status Begin();
  // Appends bytes of the current tensor (tensors in AddTensor order). When a
  // tensor's declared size is reached, the padding is written and the next
  // tensor becomes current. More bytes than declared is InvalidArgument.
  Status Append(std::span<const uint8_t> bytes);
  // Checks that every tensor was written in full, flushes, closes and renames
  // the temporary file onto the target path.
  Status Finish();

  uint64_t bytes_written() const { return written_; }
  uint64_t alignment() const;

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;
    DType type;
    uint64_t size_bytes;
  };
  Status Write(const void* p, size_t n);
  Status Pad();
  void Abort();

  std::string path_, tmp_path_;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
  std::FILE* file_ = nullptr;
  size_t current_ = 0;         // tensor being appended
  uint64_t current_done_ = 0;  // its bytes written so far
  uint64_t written_ = 0;
  bool finished_ = false;
};

}  // namespace brisk
