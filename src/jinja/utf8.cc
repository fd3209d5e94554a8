#include "jinja/utf8.h"

#include <algorithm>

namespace brisk::jinja {

uint32_t Utf8Decode(std::string_view s, size_t i, size_t* len) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (i + n > s.size()) n = 1;
  for (int k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) n = 1;
  }
  *len = n;
  if (n == 1) return c < 0x80 ? c : 0xFFFD;
  uint32_t cp = c & (0x7F >> n);
  for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

size_t Utf8Length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    Utf8Decode(s, i, &len);
    i += len;
    ++n;
  }
  return n;
}

std::vector<size_t> Utf8Offsets(std::string_view s) {
  std::vector<size_t> offs;
  offs.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    offs.push_back(i);
    size_t len;
    Utf8Decode(s, i, &len);
    i += len;
  }
  offs.push_back(s.size());
  return offs;
}

bool IsPyWhitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

std::string PyStrip(std::string_view s, bool left, bool right,
                    const std::optional<std::string>& chars) {
  std::vector<uint32_t> set;
  if (chars) {
    for (size_t i = 0; i < chars->size();) {
      size_t len;
      set.push_back(Utf8Decode(*chars, i, &len));
      i += len;
    }
  }
  auto strip_cp = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : IsPyWhitespace(cp);
  };
  // Only the stripped ends are decoded: O(stripped), not O(size).
  size_t b = 0, e = s.size();
  while (left && b < e) {
    size_t len;
    if (!strip_cp(Utf8Decode(s, b, &len))) break;
    b += len;
  }
  while (right && e > b) {
    size_t start = e - 1;
    while (start > b && e - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) {
      --start;
    }
    size_t len;
    uint32_t cp = Utf8Decode(s, start, &len);
    if (start + len != e) {  // not a whole sequence: the last byte alone
      start = e - 1;
      cp = Utf8Decode(s, start, &len);
    }
    if (!strip_cp(cp)) break;
    e = start;
  }
  return std::string(s.substr(b, e - b));
}

}  // namespace brisk::jinja
