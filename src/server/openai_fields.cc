#include "server/openai_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "server/strict_json.h"

namespace brisk::api::fields {

ApiError Bad(std::string param, std::string code, std::string message) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

std::string Snippet(std::string_view s, size_t max) { return CutUtf8(s, max); }

size_t CountCodePoints(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

std::string Describe(const Json& v) { return v.is_number() ? v.dump() : v.type_name(); }

ApiError TypeError(const std::string& param, std::string_view expected, const Json& got) {
  return Bad(param, "invalid_type",
             fmt::format("'{}' must be {}, got {}", param, expected, Describe(got)));
}

ApiError Unsupported(const std::string& param, std::string message) {
  return Bad(param, "unsupported", std::move(message));
}

ApiError Missing(const std::string& param) {
  return Bad(param, "missing_required_parameter",
             fmt::format("Missing required parameter: '{}'", param));
}

ApiError Unknown(const std::string& param) {
  std::string name = Snippet(param);
  std::string message = fmt::format("Unrecognized request argument supplied: {}", name);
  return Bad(std::move(name), "unknown_parameter", std::move(message));
}

std::string IgnoredName(std::string_view param) {
  std::string out;
  for (size_t i = 0; i < param.size(); ++i) {
    if (param[i] == '[') {
      const size_t close = param.find(']', i);
      if (close != std::string_view::npos) {
        i = close;
        continue;
      }
    }
    out.push_back(param[i]);
  }
  return Snippet(out);
}

Problem UnknownKey(const std::string& param, std::vector<std::string>* ignored) {
  if (!ignored) return Unknown(param);
  std::string name = IgnoredName(param);
  if (std::find(ignored->begin(), ignored->end(), name) == ignored->end())
    ignored->push_back(std::move(name));
  return std::nullopt;
}

const Json* Get(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Problem ReadBool(const Json& v, const std::string& param, bool* out) {
  if (!v.is_boolean()) return TypeError(param, "a boolean", v);
  *out = v.get<bool>();
  return std::nullopt;
}

Problem ReadString(const Json& v, const std::string& param, std::string* out) {
  if (!v.is_string()) return TypeError(param, "a string", v);
  *out = v.get_ref<const std::string&>();
  return std::nullopt;
}

Problem ReadNumber(const Json& v, const std::string& param, double* out) {
  if (!v.is_number()) return TypeError(param, "a number", v);
  *out = v.get<double>();
  if (!std::isfinite(*out)) return TypeError(param, "a finite number", v);
  return std::nullopt;
}

Problem ReadNumberIn(const Json& v, const std::string& param, double lo, double hi, bool lo_open,
                     bool hi_open, double* out) {
  BRISK_API_TRY(ReadNumber(v, param, out));
  const bool ok = (lo_open ? *out > lo : *out >= lo) && (hi_open ? *out < hi : *out <= hi);
  if (!ok) {
    return Bad(param, "invalid_value",
               fmt::format("'{}' must be in {}{}, {}{}, got {}", param, lo_open ? "(" : "[", lo, hi,
                           hi_open ? ")" : "]", Describe(v)));
  }
  return std::nullopt;
}

Problem ReadInt64(const Json& v, const std::string& param, int64_t* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Bad(param, "invalid_value",
                 fmt::format("'{}' must be less than or equal to {} (a signed 64-bit "
                             "integer), got {}",
                             param, std::numeric_limits<int64_t>::max(), u));
    }
    *out = static_cast<int64_t>(u);
    return std::nullopt;
  }
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return std::nullopt;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) return TypeError(param, "an integer", v);
    // An integer literal outside int64 arrives here as the nearest double:
    // -(2^63) - 1 rounds to -2^63 and 2^63 is exact, so both ends are
    // exclusive. Integer literals inside int64 never take this path (they
    // parse as integers), so -2^63 written as an integer is still accepted.
    if (d <= -0x1p63 || d >= 0x1p63) {
      // The literal was rounded to a double: say which bound, not the double.
      return Bad(param, "invalid_value",
                 d < 0 ? fmt::format("'{}' must be greater than or equal to {} (a signed 64-bit "
                                     "integer)",
                                     param, std::numeric_limits<int64_t>::min())
                       : fmt::format("'{}' must be less than or equal to {} (a signed 64-bit "
                                     "integer)",
                                     param, std::numeric_limits<int64_t>::max()));
    }
    *out = static_cast<int64_t>(d);
    return std::nullopt;
  }
  return TypeError(param, "an integer", v);
}

Problem ReadIntIn(const Json& v, const std::string& param, int64_t lo, int64_t hi, int64_t* out) {
  BRISK_API_TRY(ReadInt64(v, param, out));
  if (*out < lo || *out > hi) {
    std::string range =
        hi == kIntMax ? fmt::format(">= {}", lo) : fmt::format("in [{}, {}]", lo, hi);
    if (hi == kIntMax && *out > hi) range = fmt::format("<= {}", hi);
    return Bad(param, "invalid_value", fmt::format("'{}' must be {}, got {}", param, range, *out));
  }
  return std::nullopt;
}

}  // namespace brisk::api::fields
