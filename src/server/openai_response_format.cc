#include "server/openai_response_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace brisk::api::fields {
namespace {

// Keys of `v` other than `known` are unknown parameters (a 400, or listed in
// *ignored): a llama.cpp-style {"type": "json_object", "schema": ...} must
// not pass as if its schema applied.
Problem CheckKeys(const Json& v, const std::string& p,
                  std::initializer_list<std::string_view> known,
                  std::vector<std::string>* ignored) {
  for (const auto& [k, val] : v.items()) {
    if (std::find(known.begin(), known.end(), k) == known.end())
      BRISK_API_TRY(UnknownKey(p + "." + k, ignored));
  }
  return std::nullopt;
}

Problem ParseJsonSchema(const Json& v, ResponseFormat* rf, std::vector<std::string>* ignored) {
  const std::string p = "response_format.json_schema";
  if (!v.is_object()) return TypeError(p, "an object", v);
  BRISK_API_TRY(CheckKeys(v, p, {"name", "description", "schema", "strict"}, ignored));
  const Json* name = Get(v, "name");
  if (!name) return Missing(p + ".name");
  BRISK_API_TRY(ReadString(*name, p + ".name", &rf->name));
  if (rf->name.empty() || rf->name.size() > 64)
    return Bad(p + ".name", "invalid_value",
               fmt::format("'{}.name' must be 1 to 64 characters", p));
  if (const Json* s = Get(v, "strict")) BRISK_API_TRY(ReadBool(*s, p + ".strict", &rf->strict));
  const Json* schema = Get(v, "schema");
  if (!schema) {
    rf->schema = "{}";  // OpenAI: no schema = any JSON value
  } else if (schema->is_object() || schema->is_boolean()) {
    rf->schema = schema->dump();
  } else {
    return TypeError(p + ".schema", "an object", *schema);
  }
  return std::nullopt;
}

}  // namespace

Problem ParseResponseFormat(const Json& body, ApiRequest* req, std::vector<std::string>* ignored) {
  const Json* v = Get(body, "response_format");
  if (!v) return std::nullopt;
  if (!v->is_object()) return TypeError("response_format", "an object", *v);
  const Json* type = Get(*v, "type");
  if (!type) return Missing("response_format.type");
  if (!type->is_string()) return TypeError("response_format.type", "a string", *type);
  BRISK_API_TRY(CheckKeys(*v, "response_format", {"type", "json_schema"}, ignored));
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") return std::nullopt;
  ResponseFormat rf;
  if (t == "json_object") {
    rf.kind = ResponseFormat::Kind::kJsonObject;
  } else if (t == "json_schema") {
    rf.kind = ResponseFormat::Kind::kJsonSchema;
    const Json* js = Get(*v, "json_schema");
    if (!js) return Missing("response_format.json_schema");
    BRISK_API_TRY(ParseJsonSchema(*js, &rf, ignored));
  } else {
    return Bad("response_format.type", "invalid_value",
               fmt::format("'response_format.type' must be one of text, json_object, "
                           "json_schema, got '{}'",
                           Snippet(t)));
  }
  req->response_format = std::move(rf);
  return std::nullopt;
}

}  // namespace brisk::api::fields
