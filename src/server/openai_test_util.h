// Helpers shared by the OpenAI schema tests (openai_*_test.cc): parse a body
// expecting success or a 400, build bodies, read back JSON and SSE events.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "server/openai_request.h"

namespace brisk::api::test_util {

using Json = nlohmann::ordered_json;

inline constexpr Endpoint kChat = Endpoint::kChatCompletions;
inline constexpr Endpoint kCompl = Endpoint::kCompletions;

inline ApiRequest MustParse(Endpoint ep, std::string_view body) {
  auto r = ParseRequest(ep, body);
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << "unexpected error for " << body.substr(0, 300) << ": " << e->message;
    return {};
  }
  return std::get<ApiRequest>(std::move(r));
}

// Expects a 400 invalid_request_error with a message, and returns it.
inline ApiError MustFail(Endpoint ep, std::string_view body) {
  auto r = ParseRequest(ep, body);
  if (!std::holds_alternative<ApiError>(r)) {
    ADD_FAILURE() << "expected an error for " << body.substr(0, 300);
    return {};
  }
  ApiError e = std::get<ApiError>(std::move(r));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.type, "invalid_request_error");
  EXPECT_FALSE(e.message.empty());
  return e;
}

// A chat body with `extra` (a JSON object's members, no braces) added.
inline std::string ChatWith(std::string_view extra) {
  std::string s = R"({"model":"m","messages":[{"role":"user","content":"hi"}])";
  if (!extra.empty()) {
    s += ',';
    s += extra;
  }
  return s + "}";
}
inline std::string ComplWith(std::string_view extra) {
  std::string s = R"({"model":"m","prompt":"Once upon")";
  if (!extra.empty()) {
    s += ',';
    s += extra;
  }
  return s + "}";
}

inline Json ParseJson(const std::string& s) {
  Json j = Json::parse(s, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << s;
  return j;
}

// Strips "data: " and "\n\n" and parses the JSON in between.
inline Json ParseSse(const std::string& event) {
  EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
  EXPECT_GE(event.size(), 8u);
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n");
  const std::string payload = event.substr(6, event.size() - 8);
  EXPECT_EQ(payload.find('\n'), std::string::npos) << "one line per event";
  return ParseJson(payload);
}

}  // namespace brisk::api::test_util
