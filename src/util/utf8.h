// UTF-8 shared by the tokenizer, the streaming detokenizer, the template
// language and every writer of client-supplied text. Nothing here trusts its
// input: every function accepts arbitrary bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace brisk {

// Appends the UTF-8 encoding of `cp` (assumed <= 0x10FFFF).
void AppendUtf8(uint32_t cp, std::string* out);

enum class Utf8Check {
  kValid,       // a complete, well-formed sequence of `len` bytes
  kIncomplete,  // a well-formed prefix cut off by the end of the input
  kInvalid,     // ill-formed; `len` bytes (>= 1) should be replaced by U+FFFD
};

// Classifies the sequence starting at s[0] (s must be non-empty). For
// kInvalid, `len` is the maximal ill-formed subpart (Unicode "substitution of
// maximal subparts"), so replacing each one with U+FFFD matches what browsers
// and Python's errors="replace" do.
Utf8Check CheckUtf8(std::string_view s, size_t* len);

// Decodes one code point from a valid sequence of `len` bytes.
uint32_t DecodeUtf8(std::string_view s, size_t len);

inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";  // U+FFFD

// Returns `s` with every ill-formed subpart (including a truncated tail)
// replaced by U+FFFD: the result is always valid UTF-8.
std::string ToValidUtf8(std::string_view s);

}  // namespace brisk
