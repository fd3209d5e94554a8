// libFuzzer target for the JSON Schema compiler, the matcher and the token
// mask over the default model's vocabulary: byte 0 picks strict or lenient
// defaults, the bytes up to the next NUL are the schema, the rest is an
// instance, tokenized by the model's tokenizer and walked token by token.
// A compile never crashes: it gives a grammar or an InvalidArgument with a
// message. At each state the mask bit of the next token equals whether the
// matcher takes its bytes, the end tokens' bit equals CanEnd(), and at the
// last state reached the whole mask equals the brute-force reference. The
// masker is kept across inputs, so its per-DFA-state cache is exercised
// across grammars (an entry must never answer for another grammar).
// Loads the vocabulary from BRISK_FUZZ_MODEL or models/ in the working dir.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/token_vocab.h"
#include "grammar/schema_compiler.h"
#include "grammar/token_mask.h"
#include "model/gguf.h"
#include "model/tokenizer.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

const brisk::Tokenizer* LoadTokenizer() {
  const char* env = std::getenv("BRISK_FUZZ_MODEL");
  auto file = brisk::GgufFile::Open(env ? env : "models/SmolLM2-135M-Instruct.Q4_1.gguf");
  Check(file.ok());
  auto tok = brisk::Tokenizer::FromGguf(**file);
  Check(tok.ok());
  return std::move(*tok).release();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  static const Tokenizer* tok = LoadTokenizer();
  static const TokenTrie* trie = TokenTrie::Build(TokenVocabOf(*tok)).release();
  static TokenMasker* masker = new TokenMasker(trie);
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = rest.find('\0');
  const std::string_view schema_text = rest.substr(0, nul);
  const std::string instance =
      nul == std::string_view::npos ? std::string() : std::string(rest.substr(nul + 1, 512));
  CompileOptions options;
  options.strict_defaults = (data[0] & 1) == 0;
  auto compiled = CompileJsonSchemaText(schema_text, options);
  if (!compiled.ok()) {
    Check(compiled.status().code() == StatusCode::kInvalidArgument);
    Check(!compiled.status().message().empty());
    return 0;
  }
  GrammarMatcher m(&compiled->grammar);
  GrammarMatcher copy;
  TokenBitmask mask, ref;
  const std::vector<int32_t> ids = tok->Encode(instance, false, false);
  for (size_t i = 0;; ++i) {
    masker->Compute(m, &mask);
    if (tok->eos_id()) Check(MaskHas(mask, *tok->eos_id()) == m.CanEnd());
    bool advanced = false;
    const std::string piece = i < ids.size() ? tok->TokenToPiece(ids[i], false) : std::string();
    // Tokens with no text (or too long for the trie) are never in a mask.
    if (!piece.empty() && piece.size() <= 255 && !tok->IsControl(ids[i])) {
      copy.CopyFrom(m);
      advanced = copy.AdvanceBytes(piece);
      Check(MaskHas(mask, ids[i]) == advanced);
    }
    if (!advanced) {
      TokenMasker::ComputeReference(TokenVocabOf(*tok), m, &ref);
      Check(mask == ref);
      break;
    }
    m.CopyFrom(copy);
  }
  return 0;
}
