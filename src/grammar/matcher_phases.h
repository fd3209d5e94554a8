// Frame phases of GrammarMatcher (internal to matcher*.cc).
#pragma once

#include <cstdint>

namespace brisk::phase {

// Every kind: the value has not started (its first byte is next).
inline constexpr uint8_t kStart = 0;

// kString
inline constexpr uint8_t kStrBody = 1;

// kNumber (the JSON number grammar)
inline constexpr uint8_t kNumSign = 1;       // after '-'
inline constexpr uint8_t kNumZero = 2;       // integer part "0" (accepting)
inline constexpr uint8_t kNumInt = 3;        // integer part [1-9][0-9]* (accepting)
inline constexpr uint8_t kNumDot = 4;        // after '.'
inline constexpr uint8_t kNumFrac = 5;       // fraction digits (accepting)
inline constexpr uint8_t kNumExp = 6;        // after 'e'
inline constexpr uint8_t kNumExpSign = 7;    // after 'e+' / 'e-'
inline constexpr uint8_t kNumExpDigits = 8;  // exponent digits (accepting)

// kObject
inline constexpr uint8_t kObjFirst = 1;       // after '{'
inline constexpr uint8_t kObjKey = 2;         // inside a key
inline constexpr uint8_t kObjColon = 3;       // after the key
inline constexpr uint8_t kObjValueStart = 4;  // after ':'
inline constexpr uint8_t kObjValue = 5;       // the value's frame is above
inline constexpr uint8_t kObjAfter = 6;       // after a value: ',' or '}'
inline constexpr uint8_t kObjKeyStart = 7;    // after ','

// kArray
inline constexpr uint8_t kArrFirst = 1;      // after '['
inline constexpr uint8_t kArrValue = 2;      // the item's frame is above
inline constexpr uint8_t kArrAfter = 3;      // after an item: ',' or ']'
inline constexpr uint8_t kArrItemStart = 4;  // after ','
inline constexpr uint8_t kArrSep = 5;        // inside a bare sequence's separator (at b)

// MatchFrame::c of an object frame matching an extra (additionalProperties) key.
inline constexpr uint32_t kAdditionalKey = 0xFFFFFFFFu;
// MatchFrame::c of an object frame matching a key of its patternProperties.
inline constexpr uint32_t kPatternKey = 0xFFFFFFFEu;
// MatchFrame::b of an object frame whose key left the key trie.
inline constexpr uint32_t kOffTrie = 0xFFFFFFFFu;

}  // namespace brisk::phase
