// What a token mask needs of a vocabulary, with no tokenizer behind it: each
// token's bytes as the detokenizer emits them (SentencePiece '▁' already a
// space, <0xAB> already byte 0xAB) and its kind. Built once per vocabulary by
// the engine (engine/token_vocab.h) from the model's tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace brisk {

struct TokenVocab {
  enum class Kind : uint8_t {
    kText,     // masked by its bytes
    kEog,      // ends generation: allowed exactly when the grammar can end
    kControl,  // no text: never allowed
  };
  std::vector<std::string> pieces;  // by token id; "" for control tokens
  std::vector<Kind> kinds;          // by token id, as long as `pieces`

  int32_t size() const { return static_cast<int32_t>(pieces.size()); }
};

}  // namespace brisk
