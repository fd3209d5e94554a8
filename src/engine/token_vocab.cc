#include "engine/token_vocab.h"

namespace brisk {

TokenVocab TokenVocabOf(const Tokenizer& tokenizer) {
  TokenVocab v;
  const int32_t n = tokenizer.vocab_size();
  v.pieces.resize(n);
  v.kinds.resize(n, TokenVocab::Kind::kText);
  for (int32_t id = 0; id < n; ++id) {
    if (tokenizer.IsEog(id)) {
      v.kinds[id] = TokenVocab::Kind::kEog;
    } else if (tokenizer.IsControl(id)) {
      v.kinds[id] = TokenVocab::Kind::kControl;
    } else {
      v.pieces[id] = tokenizer.TokenToPiece(id, /*render_special=*/false);
    }
  }
  return v;
}

}  // namespace brisk
