// Text <-> token ids for the models Brisk serves, read from GGUF metadata.
//
// Two model kinds, as GGUF names them in tokenizer.ggml.model:
//  - "gpt2": byte-level BPE. Text is split by the pre-tokenizer regexes named
//    by tokenizer.ggml.pre (tokenizer_pre_split.h), each piece is merged by
//    rank (tokenizer_bpe.h). Any byte sequence encodes; Decode(Encode(x)) == x.
//  - "llama": SentencePiece-style score-driven BPE over "▁"-escaped text with
//    <0xXX> byte fallback (tokenizer_spm.h). With add_space_prefix a space is
//    put in front of the text (and after every special token, as llama.cpp).
//
// Special tokens: CONTROL and UNKNOWN tokens (<|im_start|>, <s>) are
// recognised in the text only when Encode(..., parse_special=true); untrusted
// user content should be encoded with false so that a user typing
// "<|im_end|>" cannot forge a turn boundary. USER_DEFINED tokens are always
// matched as whole strings. Matching is leftmost-longest.
//
// A Tokenizer is immutable after construction; all methods are const and
// safe to call from many threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/tokenizer_vocab.h"
#include "util/status.h"

namespace brisk {

class GgufFile;
class ByteLevelBpe;
class SentencePieceBpe;
class PreSplitter;

// A byte range [begin, end) of a text.
struct TextRange {
  size_t begin = 0;
  size_t end = 0;
};

// Everything needed to build a tokenizer; plain data so tests can write one.
struct TokenizerConfig {
  std::string model = "gpt2";   // "gpt2" (byte-level BPE) | "llama" (SentencePiece BPE)
  std::string pre = "default";  // pre-tokenizer name for "gpt2" (tokenizer.ggml.pre)
  std::vector<std::string> tokens;
  std::vector<float> scores;         // "llama": merge priority; may be empty for "gpt2"
  std::vector<int32_t> token_types;  // TokenType values; empty = all kNormal
  std::vector<std::string> merges;   // "gpt2": "left right", highest priority first
  std::optional<int32_t> bos_id, eos_id, unk_id, pad_id;
  std::optional<int32_t> eot_id, eom_id;  // end of turn / end of message
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
};

class Tokenizer {
 public:
  // Validates the config (sizes agree, ids in range, known model and
  // pre-tokenizer). Errors are InvalidArgument / Unimplemented.
  static Expected<std::unique_ptr<Tokenizer>> Create(TokenizerConfig config);
  // Reads tokenizer.ggml.* from a GGUF file.
  static Expected<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& gguf);
  static Expected<TokenizerConfig> ConfigFromGguf(const GgufFile& gguf);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: prepend BOS / append EOS as the model's config asks.
  // parse_special: recognise CONTROL token strings in `text`.
  // Never fails: any bytes encode (ill-formed UTF-8 is encoded byte-wise).
  std::vector<int32_t> Encode(std::string_view text, bool add_special, bool parse_special) const;

  // For text assembled from trusted markup and untrusted strings (a rendered
  // chat template): Encode(text, add_special, /*parse_special=*/true), except
  // that no CONTROL or UNKNOWN token is recognised where its bytes would
  // overlap one of the `plain` ranges. The text there is tokenized as with
  // parse_special=false (USER_DEFINED tokens still match), in one fragment
  // with its neighbours, as the pre-tokenizer would see plain text. Ranges
  // may come in any order and may overlap; bytes past the end are ignored.
  std::vector<int32_t> EncodeWithPlainRanges(std::string_view text, bool add_special,
                                             std::span<const TextRange> plain) const;

  // The bytes of one token (possibly a partial UTF-8 character). CONTROL and
  // UNKNOWN tokens yield their text only if `render_special`, else "".
  // Out-of-range ids yield "".
  std::string TokenToPiece(int32_t id, bool render_special = false) const;

  // Concatenated pieces. The result may be ill-formed UTF-8 if the ids are
  // (e.g. a cut-off emoji); see ToValidUtf8() / IncrementalDetokenizer. For
  // "llama" with add_space_prefix, one leading space is removed so that
  // Decode(Encode(x)) == x.
  std::string Decode(std::span<const int32_t> ids, bool skip_special) const;

  int32_t vocab_size() const { return vocab_.size(); }
  std::optional<int32_t> bos_id() const { return config_.bos_id; }
  std::optional<int32_t> eos_id() const { return config_.eos_id; }
  std::optional<int32_t> unk_id() const { return config_.unk_id; }
  std::optional<int32_t> pad_id() const { return config_.pad_id; }
  bool add_bos() const { return config_.add_bos; }
  bool add_eos() const { return config_.add_eos; }
  const std::string& model() const { return config_.model; }
  const std::string& pre() const { return config_.pre; }

  // End of generation: eos, eot, eom, and tokens with well-known end names
  // (<|im_end|>, <|eot_id|>, <end_of_turn>, <|endoftext|>, ...).
  bool IsEog(int32_t id) const;
  // CONTROL or UNKNOWN: not user-visible text.
  bool IsControl(int32_t id) const;
  TokenType token_type(int32_t id) const;

  // Exact vocab lookup of a token's stored text ("<|im_start|>", "Ġthe").
  std::optional<int32_t> TokenId(std::string_view text) const { return vocab_.Find(text); }
  // The stored text of a token ("" when out of range).
  const std::string& TokenText(int32_t id) const;

 private:
  Tokenizer();
  // Splits `text` into raw-text fragments and special-token ids.
  void EncodeFragment(std::string_view text, bool prefix_space, std::vector<int32_t>* out) const;
  // `plain`: sorted, disjoint, non-empty ranges where no CONTROL/UNKNOWN
  // token may be matched (with parse_special).
  std::vector<int32_t> EncodeImpl(std::string_view text, bool add_special, bool parse_special,
                                  std::span<const TextRange> plain) const;
  // The special token matching at text[pos] (leftmost-longest), -1 if none;
  // CONTROL/UNKNOWN tokens only if no longer than `max_control_len`.
  int32_t MatchSpecial(std::string_view text, size_t pos, size_t max_control_len,
                       size_t* len) const;

  TokenizerConfig config_;  // tokens/scores/types/merges moved into vocab_ / encoders
  Vocab vocab_;
  bool spm_ = false;
  std::unique_ptr<PreSplitter> pre_split_;
  std::unique_ptr<ByteLevelBpe> bpe_;
  std::unique_ptr<SentencePieceBpe> spm_bpe_;
  // Special tokens matched in text: a first-byte filter, then one hash set
  // per token length, longest first (Gemma has ~6k "<unusedN>" tokens, so a
  // linear scan per '<' would be slow). Views point into vocab_.tokens.
  struct SpecialBucket {
    size_t len;
    std::unordered_map<std::string_view, int32_t> ids;
  };
  std::array<bool, 256> special_first_byte_{};
  std::vector<SpecialBucket> special_buckets_;
  std::vector<int32_t> eog_ids_;
};

}  // namespace brisk
