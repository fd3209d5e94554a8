// Bodies that are valid JSON but too big or ambiguous to accept: repeated
// keys, objects past their caps, JSON nested too deep or with too many
// values. Each is a 400 that names the field.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "server/openai_request.h"
#include "server/openai_test_util.h"

namespace brisk::api {
namespace {

using namespace test_util;

// {"0":0,"1":0,...} with n members (about 10 bytes each).
std::string ObjectWithKeys(size_t n, std::string_view value = "0") {
  std::string s = "{";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) s += ",";
    s += fmt::format("\"{}\":{}", i, value);
  }
  return s + "}";
}

// 100,000 keys in logit_bias once took 14 s to parse, 60,000 keys in
// metadata were accepted. Both are now rejected at the cap, naming the field.
TEST(OpenAiApiLimitsTest, HundredThousandKeysRejectedNamingTheField) {
  const std::string keys = ObjectWithKeys(100000);
  ASSERT_GT(keys.size(), 500000u);
  ApiError e = MustFail(kChat, ChatWith(R"("logit_bias":)" + keys));
  EXPECT_EQ(e.param, "logit_bias");
  EXPECT_EQ(e.code, "invalid_value");
  EXPECT_EQ(e.message, "'logit_bias' must have at most 300 entries");

  e = MustFail(kChat, ChatWith(R"("metadata":)" + ObjectWithKeys(100000, R"("v")")));
  EXPECT_EQ(e.param, "metadata");
  EXPECT_EQ(e.code, "invalid_value");
  EXPECT_EQ(e.message, "'metadata' must have at most 16 entries");

  e = MustFail(kCompl, ComplWith(R"("metadata":)" + ObjectWithKeys(100000, R"("v")")));
  EXPECT_EQ(e.param, "metadata");
}

TEST(OpenAiApiLimitsTest, HundredThousandKeysWhereUnknownNullKeysAreAllowed) {
  // Unknown keys with null values are ignored inside messages, so this is
  // the place a large object reaches furthest; the generic cap stops it.
  const std::string msg =
      R"({"role":"user","content":"x",)" + ObjectWithKeys(100000, "null").substr(1);
  ApiError e = MustFail(kChat, R"({"model":"m","messages":[)" + msg + "]}");
  EXPECT_EQ(e.param, "messages[0]");
  EXPECT_EQ(e.code, "invalid_value");
  EXPECT_EQ(e.message, "'messages[0]' must have at most 1024 entries");
  // The whole body, too.
  e = MustFail(kChat, ObjectWithKeys(100000));
  EXPECT_EQ(e.param, "");
  EXPECT_EQ(e.message, "The request body must have at most 1024 entries");
}

TEST(OpenAiApiLimitsTest, ObjectCapsAreExact) {
  std::string nulls = ObjectWithKeys(kMaxObjectMembers - 2, "null").substr(1);
  MustParse(kChat, R"({"model":"m","messages":[{"role":"user","content":"x",)" + nulls + "]}");
  nulls = ObjectWithKeys(kMaxObjectMembers - 1, "null").substr(1);
  EXPECT_EQ(
      MustFail(kChat, R"({"model":"m","messages":[{"role":"user","content":"x",)" + nulls + "]}")
          .param,
      "messages[0]");
  // An object Brisk ignores the rest of: still capped.
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("response_format":{"type":"text","x":)" +
                                     ObjectWithKeys(kMaxObjectMembers + 1) + "}"))
                .param,
            "response_format.x");

  MustParse(kChat, ChatWith(R"("metadata":)" + ObjectWithKeys(16, R"("v")")));
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("metadata":)" + ObjectWithKeys(17, R"("v")"))).param,
            "metadata");
  // 300 logit_bias entries pass the cap.
  EXPECT_EQ(MustParse(kChat, ChatWith(R"("logit_bias":)" + ObjectWithKeys(300)))
                .sampling.logit_bias.size(),
            300u);
  EXPECT_EQ(MustFail(kCompl, ComplWith(R"("logit_bias":)" + ObjectWithKeys(301))).code,
            "invalid_value");
  // The per-field caps apply to the top-level fields only: a "metadata" in a
  // message is not cut at 16 and fails later, as an unknown key.
  EXPECT_EQ(MustFail(kChat, R"({"model":"m","messages":[{"role":"user","content":"x",)"
                            R"("metadata":)" +
                                ObjectWithKeys(17) + "}]}")
                .code,
            "unknown_parameter");
}

TEST(OpenAiApiLimitsTest, MetadataKeysAndValues) {
  // Characters are code points: 64 two-byte characters fit.
  std::string key64, value512;
  for (int i = 0; i < 64; ++i) key64 += "\xC3\xA9";
  for (int i = 0; i < 512; ++i) value512 += "\xE2\x9C\x93";
  MustParse(kChat, ChatWith(R"("metadata":{")" + key64 + R"(":")" + value512 + R"("})"));

  ApiError e = MustFail(kChat, ChatWith(R"("metadata":{")" + key64 + R"(x":"v"})"));
  EXPECT_EQ(e.code, "invalid_value");
  EXPECT_NE(e.message.find("at most 64 characters, got 65"), std::string::npos) << e.message;
  e = MustFail(kChat, ChatWith(R"("metadata":{"k":")" + value512 + R"(x"})"));
  EXPECT_EQ(e.param, "metadata.k");
  EXPECT_EQ(e.message, "'metadata.k' must be at most 512 characters, got 513");
  e = MustFail(kChat, ChatWith(R"("metadata":{"k":1})"));
  EXPECT_EQ(e.param, "metadata.k");
  EXPECT_EQ(e.code, "invalid_type");
  EXPECT_EQ(MustFail(kChat, ChatWith(R"("metadata":{"k":null})")).param, "metadata.k");
  MustParse(kChat, ChatWith(R"("metadata":{})"));
}

TEST(OpenAiApiLimitsTest, DuplicateKeysRejectedAtAnyDepth) {
  struct Case {
    Endpoint ep;
    std::string body;
    const char* param;
  };
  const std::vector<Case> cases = {
      {kChat, R"({"model":"a","messages":[{"role":"user","content":"x"}],"model":"b"})", "model"},
      {kChat, ChatWith(R"("temperature":0.1,"temperature":1.9)"), "temperature"},
      // Null or equal values change nothing: still rejected.
      {kChat, ChatWith(R"("user":null,"user":null)"), "user"},
      {kChat, ChatWith(R"("n":1,"n":1)"), "n"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":"x","role":"system"}]})",
       "messages[0].role"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":"x","foo":null,"foo":null}]})",
       "messages[0].foo"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":"x"},
          {"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]})",
       "messages[1].content[0].text"},
      {kChat, ChatWith(R"("stream_options":{"include_usage":true,"include_usage":false})"),
       "stream_options.include_usage"},
      {kChat, ChatWith(R"("metadata":{"k":"1","k":"2"})"), "metadata.k"},
      {kChat, ChatWith(R"("logit_bias":{"5":1,"5":2})"), "logit_bias.5"},
      // Inside objects Brisk otherwise ignores.
      {kChat, ChatWith(R"("response_format":{"type":"text","x":[{"y":{"z":1,"z":2}}]})"),
       "response_format.x[0].y.z"},
      // Keys compare after unescaping.
      {kChat, R"({"model":"m","\u006dodel":"m","messages":[]})", "model"},
      // Past the linear scan (more than 8 keys before the repeat).
      {kCompl, ComplWith(R"("metadata":{"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"",
          "i":"","j":"","c":""})"),
       "metadata.c"},
  };
  for (const Case& c : cases) {
    ApiError e = MustFail(c.ep, c.body);
    EXPECT_EQ(e.code, "duplicate_key") << c.body << ": " << e.message;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(e.message.find("Duplicate key"), std::string::npos) << e.message;
  }
  ApiError e = MustFail(kChat, ChatWith(R"("temperature":0.1,"temperature":1.9)"));
  EXPECT_EQ(e.message,
            "Duplicate key 'temperature' in the request body: each key may appear only "
            "once");
  e = MustFail(kChat, R"({"model":"m","messages":[{"role":"user","content":"x","role":"x"}]})");
  EXPECT_EQ(e.message, "Duplicate key 'role' in 'messages[0]': each key may appear only once");
  // The same key in different objects is fine.
  MustParse(kChat, R"({"model":"m","messages":[{"role":"user","content":"a"},
      {"role":"assistant","content":"b"}],"stream":true,"stream_options":{"include_usage":true}})");
}

// JSON arrays `depth` deep: [[...[]...]].
std::string NestedArrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(OpenAiApiLimitsTest, NestingDepthIsCapped) {
  // body (1) > response_format (2) > json_schema (3) > schema (4) > x:
  // arrays from depth 5 on.
  const std::string head =
      R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"x":)";
  MustParse(kChat, ChatWith(head + NestedArrays(kMaxJsonDepth - 4) + "}}}"));
  ApiError e = MustFail(kChat, ChatWith(head + NestedArrays(kMaxJsonDepth - 3) + "}}}"));
  EXPECT_EQ(e.code, "json_too_complex");
  EXPECT_EQ(e.message.find(
                "JSON nested deeper than 64 levels at 'response_format.json_schema.schema.x[0][0]"),
            0u)
      << e.message;
  EXPECT_EQ(e.param.rfind("response_format.json_schema.schema.x[0]", 0), 0u) << e.param;
  EXPECT_LT(e.param.size(), 200u);
}

TEST(OpenAiApiLimitsTest, ValueCountIsCapped) {
  // body, model, prompt array: 3 values besides the token ids.
  auto body = [](size_t ids) {
    std::string s = R"({"model":"m","prompt":[)";
    s.reserve(s.size() + 2 * ids + 2);
    for (size_t i = 0; i < ids; ++i) s += i ? ",1" : "1";
    return s + "]}";
  };
  EXPECT_EQ(MustParse(kCompl, body(kMaxJsonValues - 3)).prompt_tokens.at(0).size(),
            kMaxJsonValues - 3);
  ApiError e = MustFail(kCompl, body(kMaxJsonValues - 2));
  EXPECT_EQ(e.code, "json_too_complex");
  EXPECT_EQ(e.message, "Request body has more than 1048576 JSON values");
}

}  // namespace
}  // namespace brisk::api
