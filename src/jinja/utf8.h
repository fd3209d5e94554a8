// UTF-8 and Python-string helpers of the Jinja language: Python indexes,
// measures and strips strings by code point, and string literals may spell
// code points as escapes. Every function accepts arbitrary bytes: an invalid
// byte decodes alone, as U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/utf8.h"  // AppendUtf8

namespace brisk::jinja {

// Number of code points in `s` (Python len(str)).
size_t Utf8Length(std::string_view s);
// Byte offsets of each code point, plus s.size() at the end.
std::vector<size_t> Utf8Offsets(std::string_view s);
// Decodes the code point at s[i] and its byte length; an invalid byte
// decodes alone, as U+FFFD.
uint32_t Utf8Decode(std::string_view s, size_t i, size_t* len);

// Python str.isspace() for one code point.
bool IsPyWhitespace(uint32_t cp);
// Python str.strip()/lstrip()/rstrip() with no argument (Unicode whitespace),
// or with `chars` (a set of code points).
std::string PyStrip(std::string_view s, bool left, bool right,
                    const std::optional<std::string>& chars = std::nullopt);

}  // namespace brisk::jinja
