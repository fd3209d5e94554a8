// SentencePiece-style BPE (GGUF tokenizer.ggml.model = "llama"): pieces are
// UTF-8 text with spaces written as "▁" (U+2581); merges are implied by the
// vocab: any two adjacent symbols whose concatenation is a token may merge,
// the highest-scoring pair first (leftmost on ties). Characters the vocab
// lacks fall back to <0xXX> byte tokens, or to the unknown token.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizer_vocab.h"

namespace brisk {

class SentencePieceBpe {
 public:
  // `vocab` must outlive this object.
  SentencePieceBpe(const Vocab* vocab, int32_t unk_id);

  // Appends the ids for `text`, whose spaces are already escaped to ▁.
  void Encode(std::string_view text, std::vector<int32_t>* out) const;

  // Spaces -> ▁.
  static std::string EscapeSpaces(std::string_view text);
  // The bytes a token stands for: ▁ -> space, <0xXX> (kByte) -> that byte.
  std::string DecodeToken(int32_t id) const;

 private:
  const Vocab* vocab_;
  int32_t unk_id_;
  std::array<int32_t, 256> byte_ids_{};  // <0xXX> token per byte, or -1
};

}  // namespace brisk
