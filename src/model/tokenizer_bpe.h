// Byte-level BPE (GPT-2 style; GGUF tokenizer.ggml.model = "gpt2").
//
// Vocab entries are byte strings written through GPT-2's byte -> code point
// map (printable bytes map to themselves, the rest to U+0100..; a space is
// "Ġ"). Encoding a pre-tokenized piece starts from one symbol per byte and
// repeatedly applies the lowest-ranked merge, leftmost first, until none
// applies: O(n log n) in the piece length with a heap and a linked list.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/tokenizer_vocab.h"
#include "util/status.h"

namespace brisk {

class ByteLevelBpe {
 public:
  // `vocab` must outlive this object. `merges` are "left right" in the
  // vocab's encoding, highest priority first. With `ignore_merges` a piece
  // that is itself a token is emitted whole (HF BPE ignore_merges, Llama 3).
  static Expected<ByteLevelBpe> Create(const Vocab* vocab, std::span<const std::string> merges,
                                       bool ignore_merges);

  // Appends the ids for one piece of raw bytes (any bytes). A byte the vocab
  // has no token for (SmolLM2 lacks 0xC0, 0xFF, 0x14, ...) is dropped, as
  // llama.cpp and HF tokenizers do: an unknown token here would be a control
  // token such as <|endoftext|>, which must not appear from user bytes.
  void EncodePiece(std::string_view piece, std::vector<int32_t>* out) const;

  // The bytes a vocab entry stands for (reverses the byte map; code points
  // outside the map are kept as UTF-8).
  static std::string DecodeTokenText(std::string_view text);
  // The vocab-encoded form of raw bytes ("Ġhello" for " hello").
  static std::string EncodeBytes(std::string_view bytes);

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t Key(int32_t l, int32_t r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }

  const Vocab* vocab_ = nullptr;
  bool ignore_merges_ = false;
  std::array<int32_t, 256> byte_ids_{};  // id of each single-byte token, or -1
  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace brisk
