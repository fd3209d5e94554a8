// The model tokenizer's vocabulary as the grammar's token masks read it.
#pragma once

#include "grammar/token_vocab.h"
#include "model/tokenizer.h"

namespace brisk {

// Every id's TokenToPiece (without rendering special tokens) and kind:
// end-of-generation, control (no text) or text.
TokenVocab TokenVocabOf(const Tokenizer& tokenizer);

}  // namespace brisk
