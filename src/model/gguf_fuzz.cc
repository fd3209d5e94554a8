// libFuzzer target: the GGUF reader must turn any byte string into either a
// parsed file whose tensors lie inside the buffer, or an error.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "model/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = brisk::GgufFile::Parse(std::span<const uint8_t>(data, size));
  if (f.ok()) {
    for (const auto& t : (*f)->tensors()) {
      if (t.data < data || t.data + t.size_bytes > data + size) std::abort();
    }
  }
  return 0;
}
