// Strict, bounded JSON parsing for bodies that come from outside.
//
// nlohmann's own parser, building an ordered_json, inserts every object key
// with a linear search over the keys before it (quadratic in the key count:
// 100,000 keys took 14 s) and lets a repeated key silently replace the earlier
// value. ParseStrictJson builds the same ordered_json (same key order, same
// number types) in one pass that is linear in the size of the text, and stops
// at the first of:
//   - a syntax error: the 0-based byte offset where parsing stopped and
//     nlohmann's reason (invalid UTF-8 inside strings, lone surrogate escapes
//     and numbers that overflow a double are syntax errors too);
//   - a key that appears twice in one object, at any depth (keys compare
//     after unescaping: "a" and "\u0061" are the same key);
//   - more than max_depth nested arrays and objects;
//   - more than max_values values in the whole document (every scalar, array
//     and object counts one);
//   - an object with more members than its cap.
// Never throws on any input (only allocation failure can).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace brisk {

// A member cap for the object that is the value of one top-level key.
struct JsonMemberCap {
  std::string_view top_level_key;
  size_t max_members = 0;
};

struct JsonLimits {
  // A document nested this deep is rejected at the first container past it;
  // the top-level container is depth 1.
  size_t max_depth = 64;
  size_t max_values = size_t{1} << 20;
  // Every object, unless member_caps names it.
  size_t max_object_members = 1024;
  // Caps that replace max_object_members for the objects that are values of
  // the named top-level keys (only when the document is an object). The
  // span's elements must outlive the call.
  std::span<const JsonMemberCap> member_caps;
};

struct JsonParseError {
  enum class Kind { kSyntax, kDuplicateKey, kTooDeep, kTooManyValues, kTooManyMembers };
  Kind kind = Kind::kSyntax;
  size_t offset = 0;   // kSyntax: 0-based byte offset of the byte where parsing stopped
  std::string reason;  // kSyntax: what nlohmann found there, at most ~200 bytes
  // Where, in the API's notation ("messages[0].content[1]"; "" is the whole
  // document): kDuplicateKey, kTooManyMembers: the object; kTooDeep: the
  // container that is one too deep; kTooManyValues: the value that is one too
  // many. Keys are cut to 64 bytes and the whole path to about 160 bytes,
  // both on a code point boundary, with "..." marking a cut.
  std::string path;
  std::string key;   // kDuplicateKey: the repeated key, cut like a path's keys
  size_t limit = 0;  // kTooDeep, kTooManyValues, kTooManyMembers: the limit that was hit
};

// The document, or why it was rejected. `text` need not be NUL-terminated.
std::variant<nlohmann::ordered_json, JsonParseError> ParseStrictJson(std::string_view text,
                                                                     const JsonLimits& limits);

// `s` cut to at most `max` bytes on a code point boundary, with "..."
// appended when it was cut (so at most max + 3 bytes).
std::string CutUtf8(std::string_view s, size_t max);

}  // namespace brisk
