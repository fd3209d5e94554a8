// The byte-level lexer of a JSON string's contents (after the opening
// quote): escapes, \uXXXX (no surrogates), well-formed UTF-8 (no overlong
// forms, no surrogates, nothing above U+10FFFF). Its whole state is two
// bytes, kept in a MatchFrame.
#pragma once

#include <cstdint>

namespace brisk::string_lexer {

enum State : uint8_t { kNormal = 0, kEscape = 1, kHex = 2, kUtf8 = 3 };

enum class Lexed : uint8_t {
  kBad,        // not allowed here
  kClose,      // the closing quote
  kCharStart,  // the first byte of a character (raw or escape)
  kCharMore,   // a later byte of a character
};

// UTF-8 second-byte ranges after special lead bytes.
enum Utf8Range : uint8_t { kCont = 0, kE0 = 1, kED = 2, kF0 = 3, kF4 = 4 };

inline bool IsHex(uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// `state`, `aux`, `range`: the lexer state (start: all 0). canonical: object
// key form (no \/; \u only as \u00[01]x).
inline Lexed Lex(uint8_t& state, uint8_t& aux, uint8_t& range, uint8_t c, bool canonical) {
  switch (state) {
    case kNormal:
      if (c == '"') return Lexed::kClose;
      if (c == '\\') {
        state = kEscape;
        return Lexed::kCharStart;
      }
      if (c < 0x20) return Lexed::kBad;
      if (c < 0x80) return Lexed::kCharStart;
      if (c >= 0xC2 && c <= 0xDF) {
        state = kUtf8, aux = 1, range = kCont;
      } else if (c >= 0xE0 && c <= 0xEF) {
        state = kUtf8, aux = 2, range = c == 0xE0 ? kE0 : c == 0xED ? kED : kCont;
      } else if (c >= 0xF0 && c <= 0xF4) {
        state = kUtf8, aux = 3, range = c == 0xF0 ? kF0 : c == 0xF4 ? kF4 : kCont;
      } else {
        return Lexed::kBad;
      }
      return Lexed::kCharStart;
    case kUtf8: {
      uint8_t lo = 0x80, hi = 0xBF;
      switch (range) {
        case kE0: lo = 0xA0; break;
        case kED: hi = 0x9F; break;
        case kF0: lo = 0x90; break;
        case kF4: hi = 0x8F; break;
        default: break;
      }
      if (c < lo || c > hi) return Lexed::kBad;
      range = kCont;
      if (--aux == 0) state = kNormal;
      return Lexed::kCharMore;
    }
    case kEscape:
      switch (c) {
        case '"':
        case '\\':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't': state = kNormal; return Lexed::kCharMore;
        case '/':
          if (canonical) return Lexed::kBad;
          state = kNormal;
          return Lexed::kCharMore;
        case 'u': state = kHex, aux = 0; return Lexed::kCharMore;
        default: return Lexed::kBad;
      }
    case kHex: {
      if (!IsHex(c)) return Lexed::kBad;
      const uint8_t pos = aux & 3;
      if (canonical) {
        if ((pos == 0 || pos == 1) && c != '0') return Lexed::kBad;
        if (pos == 2 && c != '0' && c != '1') return Lexed::kBad;
      } else if (pos == 0 && (c == 'd' || c == 'D')) {
        aux |= 4;  // D800-DFFF would be a surrogate: checked on the next digit
      } else if (pos == 1 && (aux & 4) && !(c >= '0' && c <= '7')) {
        return Lexed::kBad;
      }
      if (pos == 3) {
        state = kNormal, aux = 0;
      } else {
        aux = static_cast<uint8_t>((aux & ~3) | (pos + 1));
      }
      return Lexed::kCharMore;
    }
  }
  return Lexed::kBad;
}

}  // namespace brisk::string_lexer
