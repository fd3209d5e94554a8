// Building blocks of the OpenAI request parser (openai_request.cc): typed
// readers of one JSON field and the ApiErrors they produce. Each reader checks
// the type, then the range, and names the field in its error; none throws.
// Internal to server/: the public API is openai_request.h.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/openai_request.h"

namespace brisk::api::fields {

using Json = nlohmann::ordered_json;
// An error to send, or nothing: the internal currency of the parser.
using Problem = std::optional<ApiError>;

#define BRISK_API_TRY(expr)                          \
  do {                                               \
    if (::brisk::api::fields::Problem _p = (expr)) { \
      return _p;                                     \
    }                                                \
  } while (0)

inline constexpr int64_t kIntMax = std::numeric_limits<int>::max();

// A 400 invalid_request_error.
ApiError Bad(std::string param, std::string code, std::string message);

// At most `max` bytes of `s`, cut on a code point boundary ("..." appended),
// for messages that quote client text.
std::string Snippet(std::string_view s, size_t max = 64);

// Unicode code points in valid UTF-8 `s` (OpenAI's "characters").
size_t CountCodePoints(std::string_view s);

// What a value is, for "got ..." in messages: numbers as written, anything
// else by JSON type name (a string's contents are not echoed).
std::string Describe(const Json& v);

// "'temperature' must be a number, got string" (code invalid_type).
ApiError TypeError(const std::string& param, std::string_view expected, const Json& got);
// A known feature Brisk does not implement (code unsupported).
ApiError Unsupported(const std::string& param, std::string message);
// "Missing required parameter: 'model'" (code missing_required_parameter).
ApiError Missing(const std::string& param);
// "Unrecognized request argument supplied: X" (code unknown_parameter); the
// name is client text of any length and is cut in both param and message.
ApiError Unknown(const std::string& param);

// An unknown key at `param`: with `ignored` null, the Unknown() error; else
// its name (IgnoredName) is added to *ignored once and parsing goes on.
Problem UnknownKey(const std::string& param, std::vector<std::string>* ignored);
// The name an ignored key is reported under: array indices dropped
// ("messages[2].foo" -> "messages.foo"), cut like Snippet().
std::string IgnoredName(std::string_view param);

// A request body as a JSON object, with every check the header of
// openai_request.h lists for the body as a whole (UTF-8, syntax, duplicate
// keys, depth, value count, member caps). Defined in openai_request.cc.
Problem ParseBodyObject(std::string_view body, Json* out);

// The value of `key`, or nullptr when it is absent or null.
const Json* Get(const Json& obj, const char* key);

Problem ReadBool(const Json& v, const std::string& param, bool* out);
Problem ReadString(const Json& v, const std::string& param, std::string* out);
// Any JSON number (integer or float), finite.
Problem ReadNumber(const Json& v, const std::string& param, double* out);
// A number in [lo, hi]; lo_open / hi_open make a bound exclusive: "(0, 1]".
Problem ReadNumberIn(const Json& v, const std::string& param, double lo, double hi, bool lo_open,
                     bool hi_open, double* out);
// An integer that fits int64; floats with an integral value (16.0) count,
// booleans do not.
Problem ReadInt64(const Json& v, const std::string& param, int64_t* out);
// An integer in [lo, hi]; hi = kIntMax reads as ">= lo".
Problem ReadIntIn(const Json& v, const std::string& param, int64_t lo, int64_t hi, int64_t* out);

}  // namespace brisk::api::fields
