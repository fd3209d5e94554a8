// tool_choice "auto" at the front door (openai_tools.h): the engine request
// carries the lazy constraint's trigger, and the engine's
// SequenceOutput::constrained_from splits the text into content and the
// call, streamed or not. Over the scripted engine of
// openai_server_test_fixture.h.
#include <gtest/gtest.h>

#include "server/openai_server.h"
#include "server/openai_server_test_fixture.h"

namespace brisk {
namespace {

using namespace openai_server_test;

const char* kAuto =
    R"({"model":"scripted-model","messages":[{"role":"user","content":"weather?"}],)"
    R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{)"
    R"("type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])";

std::string AutoBody(const std::string& extra = "") { return std::string(kAuto) + extra + "}"; }

// What a streamed chat answer said: content, the first call's pieces, the
// role delta's content and the finish_reason.
struct Streamed {
  std::string content;
  std::string name, args;
  int calls = 0;
  json role_content = "unset";
  std::string finish;
};

Streamed ReadStream(const std::vector<json>& events) {
  Streamed s;
  for (const json& e : events) {
    if (e.is_string() || e["choices"].empty()) continue;
    const json& c = e["choices"][0];
    const json& d = c["delta"];
    if (d.contains("role")) s.role_content = d["content"];
    if (d.contains("content") && d["content"].is_string()) s.content += d["content"];
    if (d.contains("tool_calls")) {
      for (const json& t : d["tool_calls"]) {
        if (t.contains("id")) {
          ++s.calls;
          s.name = t["function"]["name"];
        }
        s.args += t["function"]["arguments"].get<std::string>();
      }
    }
    if (!c["finish_reason"].is_null()) s.finish = c["finish_reason"];
  }
  return s;
}

TEST_F(OpenAiServerTest, AutoToolChoiceSendsALazyTrigger) {
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", AutoBody());
  ASSERT_EQ(r.status, 200) << r.body;
  auto subs = engine_.submitted();
  ASSERT_EQ(subs.size(), 1u);
  // The default model's template has no call marker: {"name" at the start.
  EXPECT_EQ(subs[0].request.constraint_trigger.text, "{\"name\"");
  EXPECT_TRUE(subs[0].request.constraint);
  // The scripted answer never fired the trigger: content.
  json b = json::parse(r.body);
  EXPECT_EQ(b["choices"][0]["message"]["content"], "Hello");
  EXPECT_FALSE(b["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(b["choices"][0]["finish_reason"], "stop");
}

TEST_F(OpenAiServerTest, AutoTextThenCallIsContentAndToolCalls) {
  engine_.pieces = {"Let me look. ", "{\"name\":\"get_weather\",",
                    "\"arguments\":{\"city\":", "\"Paris\"}}"};
  engine_.trigger_piece = 1;
  engine_.trigger_at = 0;
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", AutoBody());
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  const json& ch = body["choices"][0];
  EXPECT_EQ(ch["finish_reason"], "tool_calls");
  EXPECT_EQ(ch["message"]["content"], "Let me look. ");
  ASSERT_EQ(ch["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(ch["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(ch["message"]["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");

  Reply s = Call("POST", "/v1/chat/completions", AutoBody(R"(,"stream":true)"));
  ASSERT_EQ(s.status, 200) << s.body;
  const Streamed st = ReadStream(SseEvents(s.body));
  EXPECT_EQ(st.role_content, "");  // text came first
  EXPECT_EQ(st.content, "Let me look. ");
  EXPECT_EQ(st.calls, 1);
  EXPECT_EQ(st.name, "get_weather");
  EXPECT_EQ(st.args, R"({"city":"Paris"})");
  EXPECT_EQ(st.finish, "tool_calls");
}

TEST_F(OpenAiServerTest, AutoCallFromTheStartHasNullContent) {
  // The trigger fires inside the first piece that has text.
  engine_.pieces = {"", "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}"};
  engine_.trigger_piece = 1;
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", AutoBody());
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  const json& ch = body["choices"][0];
  EXPECT_TRUE(ch["message"]["content"].is_null());
  EXPECT_EQ(ch["finish_reason"], "tool_calls");

  Reply s = Call("POST", "/v1/chat/completions", AutoBody(R"(,"stream":true)"));
  const Streamed st = ReadStream(SseEvents(s.body));
  EXPECT_TRUE(st.role_content.is_null());
  EXPECT_EQ(st.content, "");
  EXPECT_EQ(st.args, R"({"city":"Oslo"})");
  EXPECT_EQ(st.finish, "tool_calls");
}

TEST_F(OpenAiServerTest, AutoCallCutOffIsNotACall) {
  engine_.pieces = {"ok ", "{\"name\":\"get_weather\",\"argu"};
  engine_.trigger_piece = 1;
  engine_.reason = FinishReason::kLength;
  StartServer();
  Reply r = Call("POST", "/v1/chat/completions", AutoBody());
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  const json& ch = body["choices"][0];
  EXPECT_EQ(ch["finish_reason"], "length");
  EXPECT_EQ(ch["message"]["content"], "ok ");
  EXPECT_FALSE(ch["message"].contains("tool_calls"));
}

}  // namespace
}  // namespace brisk
