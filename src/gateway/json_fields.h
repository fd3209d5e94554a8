// Reading fields of JSON that came from outside (clients, upstreams) without
// exceptions: nlohmann's value() throws when a field has another type, and a
// throw on an I/O or upstream thread would end the process. Each getter gives
// the fallback unless `j` is an object whose `key` has the expected type.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace brisk::gateway {

inline const nlohmann::json* FieldOf(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

inline bool BoolOr(const nlohmann::json& j, const char* key, bool fallback) {
  const nlohmann::json* v = FieldOf(j, key);
  return v && v->is_boolean() ? v->get<bool>() : fallback;
}

inline int64_t IntOr(const nlohmann::json& j, const char* key, int64_t fallback) {
  const nlohmann::json* v = FieldOf(j, key);
  return v && v->is_number_integer() ? v->get<int64_t>() : fallback;
}

inline double NumberOr(const nlohmann::json& j, const char* key, double fallback) {
  const nlohmann::json* v = FieldOf(j, key);
  return v && v->is_number() ? v->get<double>() : fallback;
}

inline std::string StringOr(const nlohmann::json& j, const char* key, std::string fallback) {
  const nlohmann::json* v = FieldOf(j, key);
  return v && v->is_string() ? v->get<std::string>() : fallback;
}

// The field as it is (any type), or null.
inline nlohmann::json AnyOr(const nlohmann::json& j, const char* key) {
  const nlohmann::json* v = FieldOf(j, key);
  return v ? *v : nlohmann::json();
}

}  // namespace brisk::gateway
