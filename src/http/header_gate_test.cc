#include "http/header_gate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace brisk {
namespace {

http::Request Head(std::string method, std::string path, http::Headers headers) {
  http::Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.target = r.path;
  r.headers = std::move(headers);
  return r;
}

ApiKeyConfig Key(std::string key, std::string tenant) {
  ApiKeyConfig k;
  k.key = std::move(key);
  k.tenant = std::move(tenant);
  return k;
}

HeaderGateConfig OpenAiLike() {
  HeaderGateConfig cfg;
  cfg.routes = {{"/health", {"GET", "HEAD"}, false, false},
                {"/v1/models", {"GET"}, false, true},
                {"/v1/chat/completions", {"POST"}, true, true}};
  return cfg;
}

// The OpenAI error shape; returns the inner object.
nlohmann::json ErrorOf(const http::EarlyResponse& r) {
  bool json = false;
  for (const auto& [k, v] : r.headers) json |= k == "Content-Type" && v == "application/json";
  EXPECT_TRUE(json);
  auto doc = nlohmann::json::parse(r.body);
  EXPECT_EQ(doc.size(), 1u);
  const auto& e = doc.at("error");
  EXPECT_TRUE(e.at("message").is_string());
  EXPECT_TRUE(e.at("type").is_string());
  EXPECT_TRUE(e.at("param").is_null());
  EXPECT_TRUE(e.at("code").is_string());
  return e;
}

TEST(HeaderGate, JsonContentType) {
  for (std::string_view ok :
       {"application/json", "Application/JSON", "application/json; charset=utf-8",
        " application/json ;charset=UTF-8"}) {
    EXPECT_TRUE(IsJsonContentType(ok)) << ok;
  }
  for (std::string_view bad :
       {"", "text/plain", "application/jsonx", "application/json-seq",
        "multipart/form-data; boundary=x", "application/x-www-form-urlencoded", "text/json"}) {
    EXPECT_FALSE(IsJsonContentType(bad)) << bad;
  }
}

TEST(HeaderGate, PassesAWellFormedRequest) {
  auto cfg = OpenAiLike();
  cfg.allowed_hosts = {"localhost"};
  cfg.keys = {Key("k1", "a"), Key("k2", "b")};
  EXPECT_FALSE(CheckHeaders(cfg, Head("POST", "/v1/chat/completions",
                                      {{"Host", "localhost:8000"},
                                       {"Authorization", "Bearer k2"},
                                       {"Content-Type", "application/json; charset=utf-8"}})));
  EXPECT_FALSE(CheckHeaders(cfg, Head("GET", "/health", {{"Host", "localhost"}})));
  EXPECT_FALSE(CheckHeaders({}, Head("PUT", "/anything", {})));  // nothing configured
}

TEST(HeaderGate, UnknownPathAndWrongMethod) {
  auto cfg = OpenAiLike();
  auto r = CheckHeaders(cfg, Head("GET", "/v2/nope", {}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(ErrorOf(*r)["code"], "not_found");
  r = CheckHeaders(cfg, Head("GET", "/v1/chat/completions", {}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(ErrorOf(*r)["code"], "method_not_allowed");
  bool allow = false;
  for (const auto& [k, v] : r->headers) allow |= k == "Allow" && v == "POST";
  EXPECT_TRUE(allow);
}

TEST(HeaderGate, NonJsonPostIs415) {
  auto cfg = OpenAiLike();
  for (std::string type :
       {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b", ""}) {
    http::Headers h;
    if (!type.empty()) h.emplace_back("Content-Type", type);
    auto r = CheckHeaders(cfg, Head("POST", "/v1/chat/completions", h));
    ASSERT_TRUE(r) << type;
    EXPECT_EQ(r->status, 415) << type;
    EXPECT_EQ(ErrorOf(*r)["code"], "unsupported_media_type");
  }
}

TEST(HeaderGate, ForeignHostIs421) {
  auto cfg = OpenAiLike();
  cfg.allowed_hosts = {"localhost", "127.0.0.1", "[::1]"};
  auto r = CheckHeaders(cfg, Head("GET", "/health", {{"Host", "attacker.example:8000"}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 421);
  auto e = ErrorOf(*r);
  EXPECT_EQ(e["code"], "host_not_allowed");
  EXPECT_NE(e["message"].get<std::string>().find("attacker.example"), std::string::npos);
  EXPECT_FALSE(CheckHeaders(cfg, Head("GET", "/health", {{"Host", "[::1]:8000"}})));
}

TEST(HeaderGate, KeyIsCheckedWhereNeeded) {
  auto cfg = OpenAiLike();
  cfg.keys = {Key("good", "t")};
  const http::Headers json = {{"Content-Type", "application/json"}};
  auto r = CheckHeaders(cfg, Head("POST", "/v1/chat/completions", json));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  auto e = ErrorOf(*r);
  EXPECT_EQ(e["code"], "invalid_api_key");
  EXPECT_NE(e["message"].get<std::string>().find("Missing"), std::string::npos);

  auto with = json;
  with.emplace_back("Authorization", "Bearer bad");
  r = CheckHeaders(cfg, Head("POST", "/v1/chat/completions", with));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_NE(ErrorOf(*r)["message"].get<std::string>().find("Incorrect"), std::string::npos);

  // The key comes before the content type: no hint about the API without one.
  r = CheckHeaders(cfg, Head("POST", "/v1/chat/completions", {{"Content-Type", "text/plain"}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);

  with.back().second = "Bearer good";
  EXPECT_FALSE(CheckHeaders(cfg, Head("POST", "/v1/chat/completions", with)));
  EXPECT_FALSE(CheckHeaders(cfg, Head("GET", "/health", {})));  // needs_key = false
}

}  // namespace
}  // namespace brisk
