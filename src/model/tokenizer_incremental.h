// Streaming detokenizer: turns generated token ids into text chunks that are
// always valid UTF-8, for SSE. A token may end in the middle of a character
// (byte-level BPE splits emoji and CJK across tokens); those trailing bytes
// are held back until the character completes. Bytes that can never form a
// character become U+FFFD at once; whatever is still held at Flush() becomes
// one U+FFFD.
//
// Concatenating every Push() and the final Flush() equals
// ToValidUtf8(tokenizer.Decode(ids, skip_special)) except that no leading
// space is stripped (generated text continues a prompt).
#pragma once

#include <cstdint>
#include <string>

namespace brisk {

class Tokenizer;

class IncrementalDetokenizer {
 public:
  // `tokenizer` must outlive this object. With `skip_special`, control
  // tokens (<|im_end|>) produce no text.
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special = true)
      : tokenizer_(&tokenizer), skip_special_(skip_special) {}

  // Text completed by this token (may be empty).
  std::string Push(int32_t token);
  // Ends the stream: the held-back bytes as U+FFFD (or "").
  std::string Flush();

  // Bytes currently held back (0..3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  std::string pending_;  // an incomplete UTF-8 sequence
};

}  // namespace brisk
