// tool_choice "auto" at the front door (openai_tools.h): the engine request
// carries the lazy constraint's trigger, and the engine's
// SequenceOutput::constrained_from splits the text into content and the
// call, streamed or not. Over the scripted engine of
// openai_server_test_fixture.h.
#include <gtest/gtest.h>

#include <map>

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

// A /v1/responses body with the get_weather tool, without its closing '}'.
const std::string kResponsesToolsBody =
    R"({"model":"scripted-model","input":"weather?","tools":[{"type":"function",)"
    R"("name":"get_weather","parameters":{"type":"object","properties":{)"
    R"("city":{"type":"string"}},"required":["city"]}}])";

// Cut off by max_tokens inside a call: the calls closed before it are the
// answer (none: the text alone), the unfinished one is dropped, and
// finish_reason stays "length" (the stream sends the same calls' deltas
// before its cut).
TEST_F(OpenAiServerTest, AutoCallsCutOffKeepTheCompleteOnes) {
  const std::string call = R"({"name":"get_weather","arguments":{"city":"Oslo"}})";
  const std::string cut = R"({"name":"get_weather","argu)";
  const std::vector<std::vector<std::string>> outputs = {
      {"ok ", cut}, {"ok ", call, "\n</tool_call>\n<tool_call>\n" + cut}};
  engine_.trigger_piece = 1;
  engine_.reason = FinishReason::kLength;
  StartServer();
  for (size_t closed = 0; closed < outputs.size(); ++closed) {
    engine_.pieces = outputs[closed];  // requests run one at a time
    Reply r = Call("POST", "/v1/chat/completions", AutoBody());
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = json::parse(r.body);
    const json& ch = body["choices"][0];
    EXPECT_EQ(ch["finish_reason"], "length");
    EXPECT_EQ(ch["message"]["content"], "ok ");
    if (closed == 0) {
      EXPECT_FALSE(ch["message"].contains("tool_calls")) << r.body;
      continue;
    }
    ASSERT_EQ(ch["message"]["tool_calls"].size(), 1u) << r.body;
    EXPECT_EQ(ch["message"]["tool_calls"][0]["function"]["arguments"], R"({"city":"Oslo"})");
  }

  // The Responses API: the text, the closed call "completed", the response
  // "incomplete"; streamed, the cut call is there too, "incomplete".
  Reply rr = Call("POST", "/v1/responses", kResponsesToolsBody + "}");
  ASSERT_EQ(rr.status, 200) << rr.body;
  const json resp = json::parse(rr.body);
  EXPECT_EQ(resp["status"], "incomplete");
  const json& items = resp["output"];
  ASSERT_EQ(items.size(), 2u) << rr.body;
  EXPECT_EQ(items[0]["type"], "message");
  EXPECT_EQ(items[1]["type"], "function_call");
  EXPECT_EQ(items[1]["status"], "completed");
  EXPECT_EQ(items[1]["arguments"], R"({"city":"Oslo"})");
  Reply rs = Call("POST", "/v1/responses", kResponsesToolsBody + R"(,"stream":true})");
  ASSERT_EQ(rs.status, 200) << rs.body;
  std::vector<std::string> done;
  for (const json& e : SseEvents(rs.body))
    if (e.is_object() && e["type"] == "response.output_item.done" &&
        e["item"]["type"] == "function_call")
      done.push_back(e["item"]["status"]);
  EXPECT_EQ(done, (std::vector<std::string>{"completed", "incomplete"}));
}

// A call cut off by max_output_tokens before it closed is never text: under a
// forced tool_choice the response has no message item (streamed: no
// output_text event at all), under "auto" the message is the text before the
// call. pydantic-ai's typed output relies on it.
TEST_F(OpenAiServerTest, ResponsesCallCutOffIsNeverText) {
  engine_.reason = FinishReason::kLength;
  StartServer();
  for (const char* choice : {R"("required")", R"({"type":"function","name":"get_weather"})"}) {
    SCOPED_TRACE(choice);
    // Cut before the name is complete, and after it.
    for (const std::vector<std::string>& pieces :
         {std::vector<std::string>{"[{\"na", "me\":\"get_w"},
          std::vector<std::string>{"[{\"name\":\"get_weather\",", "\"argu"}}) {
      engine_.pieces = pieces;
      const std::string body = kResponsesToolsBody + R"(,"tool_choice":)" + choice;
      Reply r = Call("POST", "/v1/responses", body + "}");
      ASSERT_EQ(r.status, 200) << r.body;
      const json resp = json::parse(r.body);
      EXPECT_EQ(resp["status"], "incomplete");
      for (const json& item : resp["output"]) EXPECT_NE(item["type"], "message") << r.body;
      Reply rs = Call("POST", "/v1/responses", body + R"(,"stream":true})");
      ASSERT_EQ(rs.status, 200) << rs.body;
      for (const json& e : SseEvents(rs.body)) {
        if (!e.is_object()) continue;
        const std::string type = e["type"];
        EXPECT_EQ(type.find("output_text"), std::string::npos) << rs.body;
        if (type == "response.output_item.done") {
          EXPECT_EQ(e["item"]["type"], "function_call");
          EXPECT_EQ(e["item"]["status"], "incomplete");
        }
        if (type == "response.incomplete") {
          for (const json& item : e["response"]["output"]) EXPECT_NE(item["type"], "message");
        }
      }
    }
  }
  // "auto", cut inside the first call: the text before it, not the call's text.
  engine_.pieces = {"ok ", R"({"name":"get_weather","argu)"};
  engine_.trigger_piece = 1;
  Reply r = Call("POST", "/v1/responses", kResponsesToolsBody + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  const json resp = json::parse(r.body);
  ASSERT_EQ(resp["output"].size(), 1u) << r.body;
  EXPECT_EQ(resp["output"][0]["type"], "message");
  EXPECT_EQ(resp["output"][0]["content"][0]["text"], "ok ");
}

// Several calls under "auto" (parallel_tool_calls): the engine's text is
// the calls one after another in the template's tags (a marker template),
// or a JSON array of them (a template without a marker). Each call is one
// entry of message.tool_calls, its own id; streamed, each call's deltas
// carry its index.
struct IndexedCall {
  std::string id, name, args;
};

std::map<int, IndexedCall> StreamedCalls(const std::vector<json>& events, std::string* finish) {
  std::map<int, IndexedCall> calls;
  for (const json& e : events) {
    if (e.is_string() || e["choices"].empty()) continue;
    const json& c = e["choices"][0];
    if (!c["finish_reason"].is_null()) *finish = c["finish_reason"];
    if (!c["delta"].contains("tool_calls")) continue;
    for (const json& t : c["delta"]["tool_calls"]) {
      IndexedCall& call = calls[t["index"].get<int>()];
      if (t.contains("id")) {
        EXPECT_TRUE(call.id.empty()) << "a second id for one index";
        call.id = t["id"];
        call.name = t["function"]["name"];
      }
      call.args += t["function"]["arguments"].get<std::string>();
    }
  }
  return calls;
}

TEST_F(OpenAiServerTest, AutoParallelCallsAreOneToolCallEach) {
  const std::vector<std::vector<std::string>> outputs = {
      {"Both: ", "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Pa", "ris\"}}\n</tool",
       "_call>\n<tool_call>\n{\"name\":\"get_weather\",", "\"arguments\":{\"city\":\"Oslo\"}}"},
      {"Both: ", "[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}},{\"name\":",
       "\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}]"}};
  StartServer();
  for (const auto& pieces : outputs) {
    engine_.pieces = pieces;  // requests run one at a time
    engine_.trigger_piece = 1;
    engine_.trigger_at = 0;
    Reply r = Call("POST", "/v1/chat/completions", AutoBody());
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = json::parse(r.body);
    const json& ch = body["choices"][0];
    EXPECT_EQ(ch["finish_reason"], "tool_calls");
    EXPECT_EQ(ch["message"]["content"], "Both: ");
    const json& calls = ch["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), 2u) << r.body;
    EXPECT_NE(calls[0]["id"], calls[1]["id"]);
    EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Paris"})");
    EXPECT_EQ(calls[1]["function"]["name"], "get_weather");
    EXPECT_EQ(calls[1]["function"]["arguments"], R"({"city":"Oslo"})");

    Reply s = Call("POST", "/v1/chat/completions", AutoBody(R"(,"stream":true)"));
    ASSERT_EQ(s.status, 200) << s.body;
    std::string finish;
    auto streamed = StreamedCalls(SseEvents(s.body), &finish);
    EXPECT_EQ(finish, "tool_calls");
    ASSERT_EQ(streamed.size(), 2u) << s.body;
    EXPECT_EQ(streamed[0].args, R"({"city":"Paris"})");
    EXPECT_EQ(streamed[1].name, "get_weather");
    EXPECT_EQ(streamed[1].args, R"({"city":"Oslo"})");
    EXPECT_NE(streamed[0].id, streamed[1].id);
    EXPECT_EQ(ReadStream(SseEvents(s.body)).content, "Both: ");

    // The Responses API: the text, then one function_call item per call.
    Reply rr = Call("POST", "/v1/responses", kResponsesToolsBody + "}");
    ASSERT_EQ(rr.status, 200) << rr.body;
    const json resp = json::parse(rr.body);
    const json& items = resp["output"];
    ASSERT_EQ(items.size(), 3u) << rr.body;
    EXPECT_EQ(items[0]["type"], "message");
    EXPECT_EQ(items[1]["type"], "function_call");
    EXPECT_EQ(items[1]["arguments"], R"({"city":"Paris"})");
    EXPECT_EQ(items[2]["type"], "function_call");
    EXPECT_EQ(items[2]["arguments"], R"({"city":"Oslo"})");
    EXPECT_NE(items[1]["call_id"], items[2]["call_id"]);
    // Streamed: each call's item is done before the next one is added.
    Reply rs = Call("POST", "/v1/responses", kResponsesToolsBody + R"(,"stream":true})");
    ASSERT_EQ(rs.status, 200) << rs.body;
    std::vector<std::pair<std::string, int>> order;
    for (const json& e : SseEvents(rs.body))
      if (e.is_object() && e.contains("item") && e["item"]["type"] == "function_call")
        order.emplace_back(e["type"], e["output_index"]);
    const std::vector<std::pair<std::string, int>> want = {{"response.output_item.added", 1},
                                                           {"response.output_item.done", 1},
                                                           {"response.output_item.added", 2},
                                                           {"response.output_item.done", 2}};
    EXPECT_EQ(order, want);
  }
}

}  // namespace
}  // namespace brisk
