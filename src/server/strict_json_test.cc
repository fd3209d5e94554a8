#include "server/strict_json.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace brisk {
namespace {

using Json = nlohmann::ordered_json;
using Kind = JsonParseError::Kind;

Json MustParse(std::string_view text, const JsonLimits& limits = {}) {
  auto r = ParseStrictJson(text, limits);
  if (auto* e = std::get_if<JsonParseError>(&r)) {
    ADD_FAILURE() << "unexpected error for " << text.substr(0, 200) << ": kind "
                  << static_cast<int>(e->kind) << " at '" << e->path << "' " << e->reason;
    return {};
  }
  return std::get<Json>(std::move(r));
}

JsonParseError MustFail(std::string_view text, const JsonLimits& limits = {}) {
  auto r = ParseStrictJson(text, limits);
  if (!std::holds_alternative<JsonParseError>(r)) {
    ADD_FAILURE() << "expected an error for " << text.substr(0, 200);
    return {};
  }
  return std::get<JsonParseError>(std::move(r));
}

TEST(StrictJsonTest, SameDocumentAsNlohmann) {
  for (const char* text : {
           R"({"b":1,"a":[true,false,null],"c":{"z":"s","y":-3,"x":1.5e3}})",
           R"([18446744073709551615,-9223372036854775808,9223372036854775807,1e308,0.0,-0])",
           R"("h\u00e9llo \ud83d\ude00 \"q\" \\ \n")",
           R"({})",
           R"([])",
           R"([{}, [], [[{"k":[]}]], {"e":{}}])",
           "  \t\n 42 \r\n",
           "null",
           R"({"":"empty key","k":{"":{"":0}}})",
       }) {
    const Json ours = MustParse(text);
    const Json theirs = Json::parse(text);
    EXPECT_EQ(ours, theirs) << text;
    EXPECT_EQ(ours.dump(), theirs.dump()) << text;  // key order and number types too
  }
  const Json big = MustParse("[18446744073709551615,-1,1.0]");
  EXPECT_TRUE(big[0].is_number_unsigned());
  EXPECT_TRUE(big[1].is_number_integer());
  EXPECT_TRUE(big[2].is_number_float());
}

TEST(StrictJsonTest, ManyKeysKeepTheirOrder) {
  std::string text = "{";
  for (int i = 0; i < 5000; ++i) text += fmt::format("{}\"k{}\":{}", i ? "," : "", 4999 - i, i);
  text += "}";
  JsonLimits limits;
  limits.max_object_members = 5000;
  const Json j = MustParse(text, limits);
  ASSERT_EQ(j.size(), 5000u);
  int i = 0;
  for (const auto& [k, v] : j.items()) {
    EXPECT_EQ(k, fmt::format("k{}", 4999 - i));
    EXPECT_EQ(v, i);
    ++i;
  }
}

TEST(StrictJsonTest, SyntaxErrorsHaveOffsetAndReason) {
  JsonParseError e = MustFail(R"({"a": oops})");
  EXPECT_EQ(e.kind, Kind::kSyntax);
  EXPECT_EQ(e.offset, 6u);
  EXPECT_NE(e.reason.find("syntax error"), std::string::npos) << e.reason;
  EXPECT_EQ(e.reason.find("[json.exception"), std::string::npos) << e.reason;
  for (const char* text : {"", "{", "[1,]", "{\"a\":1} x", "\"\\ud800\"", "1e400", "{\"a\" 1}"}) {
    EXPECT_EQ(MustFail(text).kind, Kind::kSyntax) << text;
  }
}

TEST(StrictJsonTest, DuplicateKeysAtAnyDepth) {
  JsonParseError e = MustFail(R"({"a":1,"b":2,"a":3})");
  EXPECT_EQ(e.kind, Kind::kDuplicateKey);
  EXPECT_EQ(e.key, "a");
  EXPECT_EQ(e.path, "");
  e = MustFail(R"({"x":[0,{"y":{"a":1,"a":1}}]})");
  EXPECT_EQ(e.kind, Kind::kDuplicateKey);
  EXPECT_EQ(e.key, "a");
  EXPECT_EQ(e.path, "x[1].y");
  e = MustFail(R"([{"k":1},{"k":1,"k":2}])");
  EXPECT_EQ(e.path, "[1]");
  EXPECT_EQ(MustFail(R"({"a":1,"\u0061":2})").kind, Kind::kDuplicateKey);
  // Same key in sibling or nested objects is no duplicate.
  MustParse(R"({"a":{"a":{"a":1}},"b":{"a":2},"c":[{"a":1},{"a":1}]})");
  // Past the linear scan: every position of the repeat.
  for (int n : {8, 9, 10, 40}) {
    for (int dup = 0; dup < n; ++dup) {
      std::string text = "{";
      for (int i = 0; i < n; ++i) text += fmt::format("\"k{}\":0,", i);
      text += fmt::format("\"k{}\":1}}", dup);
      e = MustFail(text);
      EXPECT_EQ(e.kind, Kind::kDuplicateKey) << text;
      EXPECT_EQ(e.key, fmt::format("k{}", dup));
    }
  }
  // A long key is cut in the report.
  const std::string long_key(10000, 'k');
  e = MustFail("{\"" + long_key + "\":1,\"" + long_key + "\":2}");
  EXPECT_EQ(e.key, std::string(64, 'k') + "...");
}

TEST(StrictJsonTest, DepthLimitIsExact) {
  JsonLimits limits;
  limits.max_depth = 4;
  MustParse("[[[[]]]]", limits);
  MustParse(R"({"a":{"b":[{}]}})", limits);
  JsonParseError e = MustFail("[[[[[]]]]]", limits);
  EXPECT_EQ(e.kind, Kind::kTooDeep);
  EXPECT_EQ(e.limit, 4u);
  EXPECT_EQ(e.path, "[0][0][0][0]");
  e = MustFail(R"({"a":{"b":[1,{"c":{}}]}})", limits);
  EXPECT_EQ(e.kind, Kind::kTooDeep);
  EXPECT_EQ(e.path, "a.b[1].c");
  // Default: 64; an unclosed 100,000-deep document stops there.
  e = MustFail(std::string(100000, '['));
  EXPECT_EQ(e.kind, Kind::kTooDeep);
  EXPECT_EQ(e.limit, 64u);
  EXPECT_LE(e.path.size(), 163u);
  EXPECT_EQ(e.path.substr(e.path.size() - 3), "...");
}

TEST(StrictJsonTest, ValueLimitIsExact) {
  JsonLimits limits;
  limits.max_values = 5;  // the array and four elements
  MustParse("[1,\"s\",null,{}]", limits);
  JsonParseError e = MustFail("[1,\"s\",null,{},2]", limits);
  EXPECT_EQ(e.kind, Kind::kTooManyValues);
  EXPECT_EQ(e.limit, 5u);
  EXPECT_EQ(e.path, "[4]");
  limits.max_values = 2;
  EXPECT_EQ(MustFail(R"({"a":{"b":1}})", limits).path, "a.b");
}

TEST(StrictJsonTest, MemberCaps) {
  const JsonMemberCap caps[] = {{"small", 2}, {"big", 6}};
  JsonLimits limits;
  limits.max_object_members = 4;
  limits.member_caps = caps;
  MustParse(R"({"small":{"a":1,"b":2},"big":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6},
               "other":{"a":1,"b":2,"c":3,"d":4}})",
            limits);
  JsonParseError e = MustFail(R"({"small":{"a":1,"b":2,"c":3}})", limits);
  EXPECT_EQ(e.kind, Kind::kTooManyMembers);
  EXPECT_EQ(e.limit, 2u);
  EXPECT_EQ(e.path, "small");
  e = MustFail(R"({"big":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7}})", limits);
  EXPECT_EQ(e.limit, 6u);
  e = MustFail(R"({"other":{"a":1,"b":2,"c":3,"d":4,"e":5}})", limits);
  EXPECT_EQ(e.limit, 4u);
  EXPECT_EQ(e.path, "other");
  // Named caps apply to top-level keys only; elsewhere the general cap.
  e = MustFail(R"({"x":{"small":{"a":1,"b":2,"c":3,"d":4,"e":5}}})", limits);
  EXPECT_EQ(e.path, "x.small");
  EXPECT_EQ(e.limit, 4u);
  EXPECT_EQ(MustFail(R"([{"a":1,"b":2,"c":3,"d":4,"e":5}])", limits).path, "[0]");
  EXPECT_EQ(MustFail(R"({"a":1,"b":2,"c":3,"d":4,"e":5})", limits).path, "");
}

TEST(StrictJsonTest, CutUtf8) {
  EXPECT_EQ(CutUtf8("short", 10), "short");
  EXPECT_EQ(CutUtf8("abcdef", 3), "abc...");
  // "é" is 2 bytes: a cut inside it moves back to its start.
  EXPECT_EQ(CutUtf8("a\xC3\xA9z", 2), "a...");
  EXPECT_EQ(CutUtf8("\xF0\x9F\x98\x80", 3), "...");
}

}  // namespace
}  // namespace brisk
