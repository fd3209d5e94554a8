// UTF-8 encoding shared by the tokenizer and the template language.
#pragma once

#include <cstdint>
#include <string>

namespace brisk {

// Appends the UTF-8 encoding of `cp` (assumed <= 0x10FFFF).
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace brisk
