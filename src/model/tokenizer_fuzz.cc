// libFuzzer target: the default model's tokenizer on arbitrary bytes (with and
// without special-token parsing), decoding and the incremental detokenizer.
// Loads the vocabulary from BRISK_FUZZ_MODEL or models/ in the working dir.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "model/gguf.h"
#include "model/tokenizer.h"
#include "model/tokenizer_incremental.h"

namespace {
const brisk::Tokenizer* LoadTokenizer() {
  const char* env = std::getenv("BRISK_FUZZ_MODEL");
  auto file = brisk::GgufFile::Open(env ? env : "models/SmolLM2-135M-Instruct.Q4_1.gguf");
  if (!file.ok()) std::abort();
  auto tok = brisk::Tokenizer::FromGguf(**file);
  if (!tok.ok()) std::abort();
  return std::move(*tok).release();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const brisk::Tokenizer* tok = LoadTokenizer();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool special : {false, true}) {
    auto ids = tok->Encode(text, /*add_special=*/true, special);
    for (int32_t id : ids)
      if (id < 0 || id >= tok->vocab_size()) std::abort();
    (void)tok->Decode(ids, /*skip_special=*/false);
    brisk::IncrementalDetokenizer detok(*tok);
    for (int32_t id : ids) (void)detok.Push(id);
    (void)detok.Flush();
  }
  return 0;
}
