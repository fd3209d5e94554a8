// Pre-tokenizer for byte-level BPE: splits text into pieces with a sequence of
// regexes, chosen by the GGUF key tokenizer.ggml.pre. Each regex is applied in
// turn inside every piece produced by the previous one; both its matches and
// the text between matches become pieces (llama.cpp's unicode_regex_split and
// HF tokenizers' Sequence[Split(..., Isolated)] agree on this).
//
// Regexes run on PCRE2 with UTF + UCP (Unicode \p{L}, \s, ...) and JIT when
// available. Invalid UTF-8 is accepted: ill-formed bytes never match a regex
// item, so they end up in gap pieces and reach BPE as raw bytes.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace brisk {

class PreSplitter {
 public:
  // `pre` is the tokenizer.ggml.pre name ("gpt2", "smollm", "llama-bpe", ...).
  // Unknown names are InvalidArgument listing the supported ones.
  static Expected<PreSplitter> Create(std::string_view pre);
  // From explicit patterns (tests, and models that carry their own).
  static Expected<PreSplitter> FromPatterns(const std::vector<std::string>& patterns);

  PreSplitter(PreSplitter&&) noexcept;
  PreSplitter& operator=(PreSplitter&&) noexcept;
  ~PreSplitter();

  // Appends the pieces of `text`, in order; they concatenate to `text`.
  // Thread-safe (per-call match data).
  void Split(std::string_view text, std::vector<std::string_view>* pieces) const;

  // Names Create() accepts.
  static std::vector<std::string_view> KnownNames();

 private:
  struct Regex;
  PreSplitter() = default;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace brisk
