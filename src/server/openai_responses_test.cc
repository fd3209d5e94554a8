#include "server/openai_responses.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "http/header_gate.h"

namespace brisk::api {
namespace {

ResponsesRequest Parse(const std::string& body) {
  auto r = ParseResponsesRequest(body);
  if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << e->message;
  return std::get<ResponsesRequest>(std::move(r));
}

ApiError Error(const std::string& body) {
  auto r = ParseResponsesRequest(body);
  EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}

TEST(OpenAiResponsesTest, StringInputAndInstructionsBecomeChat) {
  auto r = Parse(R"({"model":"m","input":"hi","instructions":"be brief",
      "max_output_tokens":5,"temperature":0.5,"stream":true,"store":false})");
  EXPECT_TRUE(r.stream);
  EXPECT_FALSE(r.store);
  auto chat = Json::parse(ChatBody(r, Json::array()));
  EXPECT_EQ(chat["model"], "m");
  EXPECT_EQ(chat["max_tokens"], 5);
  EXPECT_EQ(chat["temperature"], 0.5);
  EXPECT_FALSE(chat.contains("stream"));
  ASSERT_EQ(chat["messages"].size(), 2u);
  EXPECT_EQ(chat["messages"][0], (Json{{"role", "system"}, {"content", "be brief"}}));
  EXPECT_EQ(chat["messages"][1], (Json{{"role", "user"}, {"content", "hi"}}));
  // The chat body passes the chat parser.
  EXPECT_TRUE(std::holds_alternative<ApiRequest>(
      ParseRequest(Endpoint::kChatCompletions, ChatBody(r, Json::array()))));
}

TEST(OpenAiResponsesTest, ItemsToolsAndTextFormat) {
  auto r = Parse(R"({"model":"m","input":[
      {"role":"user","content":[{"type":"input_text","text":"weather?"}]},
      {"type":"function_call","call_id":"call_1","name":"w","arguments":"{\"c\":1}"},
      {"type":"function_call","call_id":"call_2","name":"w","arguments":"{}"},
      {"type":"function_call_output","call_id":"call_1","output":"sunny"}],
    "tools":[{"type":"function","name":"w","parameters":{"type":"object"},"strict":null}],
    "tool_choice":{"type":"function","name":"w"},
    "text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object"},"strict":true}}})");
  Json history = Json::array({{{"role", "user"}, {"content", "before"}}});
  auto chat = Json::parse(ChatBody(r, history));
  const Json& m = chat["messages"];
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["content"], "before");
  EXPECT_EQ(m[1]["content"][0], (Json{{"type", "text"}, {"text", "weather?"}}));
  EXPECT_EQ(m[2]["role"], "assistant");
  ASSERT_EQ(m[2]["tool_calls"].size(), 2u);
  EXPECT_EQ(m[2]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], "{\"c\":1}");
  EXPECT_EQ(m[3], (Json{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}}));
  EXPECT_EQ(chat["tools"][0]["function"]["name"], "w");
  EXPECT_FALSE(chat["tools"][0]["function"].contains("strict"));
  EXPECT_EQ(chat["tool_choice"]["function"]["name"], "w");
  EXPECT_EQ(chat["response_format"]["type"], "json_schema");
  EXPECT_EQ(chat["response_format"]["json_schema"]["name"], "s");
  EXPECT_TRUE(chat["response_format"]["json_schema"]["strict"]);
  EXPECT_TRUE(std::holds_alternative<ApiRequest>(
      ParseRequest(Endpoint::kChatCompletions, ChatBody(r, history))));
}

TEST(OpenAiResponsesTest, RejectsWhatItCannotDo) {
  EXPECT_EQ(Error(R"({"input":"x"})").param, "model");
  EXPECT_EQ(Error(R"({"model":"m"})").param, "input");
  EXPECT_EQ(Error(R"({"model":"m","input":"x","bogus":1})").code, "unknown_parameter");
  auto e = Error(R"({"model":"m","input":"x","tools":[{"type":"web_search"}]})");
  EXPECT_EQ(e.code, "unsupported");
  EXPECT_EQ(e.param, "tools[0].type");
  e = Error(R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]})");
  EXPECT_EQ(e.param, "input[0].content[0].type");
  EXPECT_EQ(Error(R"({"model":"m","input":[{"type":"web_search_call"}]})").code, "unsupported");
  EXPECT_EQ(Error(R"({"model":"m","input":"x","background":true})").code, "unsupported");
  EXPECT_EQ(Error(R"({"model":"m","input":"x","text":{"format":{"type":"xml"}}})").param,
            "text.format.type");
  EXPECT_EQ(Error(R"({"model":"m","input":[{"role":"tool","content":"x"}]})").param,
            "input[0].role");
  EXPECT_EQ(Error(R"({"model":"m","input":"x","model":"n"})").code, "duplicate_key");
  // With ignore_unknown_fields the key is listed instead.
  auto r = ParseResponsesRequest(R"({"model":"m","input":"x","bogus":1})",
                                 {.ignore_unknown_fields = true});
  ASSERT_TRUE(std::holds_alternative<ResponsesRequest>(r));
  EXPECT_EQ(std::get<ResponsesRequest>(r).ignored_fields, std::vector<std::string>{"bogus"});
  // previous_response_id alone is a follow-up without new input.
  EXPECT_EQ(Parse(R"({"model":"m","previous_response_id":"resp_1"})").previous_response_id,
            "resp_1");
}

TEST(OpenAiResponsesTest, ChatErrorsAreRenamed) {
  ApiError e;
  e.param = "max_tokens";
  e.message = "'max_tokens' must be at least 1";
  e = ResponsesError(e);
  EXPECT_EQ(e.param, "max_output_tokens");
  EXPECT_EQ(e.message, "'max_output_tokens' must be at least 1");
  e.param = "response_format.json_schema.schema";
  EXPECT_EQ(ResponsesError(e).param, "text.format.schema");
  e.param = "tools[1].function.parameters";
  EXPECT_EQ(ResponsesError(e).param, "tools[1].parameters");
  e.param = "messages[0].content";
  EXPECT_EQ(ResponsesError(e).param, "input[0].content");
}

TEST(OpenAiResponsesTest, ResponseObjectShape) {
  auto r = Parse(R"({"model":"m","input":"x","max_output_tokens":3,"metadata":{"a":"b"}})");
  Usage u{.prompt_tokens = 7, .completion_tokens = 3, .cached_tokens = 2};
  Json out = Json::array({MessageItem("msg_1", "incomplete", "abc")});
  Json o = ResponseObject(r, "resp_1", 100, "m", "incomplete", out, &u);
  EXPECT_EQ(o["object"], "response");
  EXPECT_EQ(o["status"], "incomplete");
  EXPECT_EQ(o["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(o["output"][0]["content"][0]["type"], "output_text");
  EXPECT_EQ(o["output"][0]["content"][0]["text"], "abc");
  EXPECT_EQ(o["usage"]["input_tokens"], 7);
  EXPECT_EQ(o["usage"]["input_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(o["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
  EXPECT_EQ(o["usage"]["total_tokens"], 10);
  EXPECT_EQ(o["metadata"]["a"], "b");
  EXPECT_EQ(o["max_output_tokens"], 3);
  EXPECT_EQ(o["text"]["format"]["type"], "text");
  EXPECT_EQ(o["tool_choice"], "auto");
  EXPECT_TRUE(o["store"]);
  EXPECT_TRUE(o["previous_response_id"].is_null());
  Json done = ResponseObject(r, "resp_1", 100, "m", "completed", out, nullptr);
  EXPECT_TRUE(done["incomplete_details"].is_null());
  EXPECT_TRUE(done["usage"].is_null());
}

TEST(OpenAiResponsesTest, OutputBecomesHistory) {
  Json out = Json::array({FunctionCallItem("fc_1", "call_1", "f", "{}", "completed"),
                          FunctionCallItem("fc_2", "call_2", "g", "{\"a\":1}", "completed")});
  Json msgs = OutputToMessages(out);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0]["tool_calls"][1]["id"], "call_2");
  EXPECT_EQ(msgs[0]["tool_calls"][1]["function"]["name"], "g");
  msgs = OutputToMessages(Json::array({MessageItem("msg_1", "completed", "hello")}));
  EXPECT_EQ(msgs[0], (Json{{"role", "assistant"}, {"content", "hello"}}));
}

TEST(OpenAiResponsesTest, EventsCarryTypeAndSequence) {
  int64_t seq = 0;
  std::string a = ResponsesEvent("response.output_text.delta", {{"delta", "x"}}, &seq);
  std::string b = ResponsesEvent("response.completed", {{"response", Json::object()}}, &seq);
  EXPECT_EQ(a,
            "event: response.output_text.delta\ndata: "
            "{\"type\":\"response.output_text.delta\",\"delta\":\"x\",\"sequence_number\":0}\n\n");
  EXPECT_NE(b.find("\"sequence_number\":1"), std::string::npos);
  EXPECT_EQ(seq, 2);
  EXPECT_EQ(NewResponseId().rfind("resp_", 0), 0u);
  EXPECT_NE(NewResponseId(), NewResponseId());
}

TEST(OpenAiResponsesTest, InputItemsKeepIdsAndGetNewOnes) {
  auto r = Parse(R"({"model":"m","input":[
      {"role":"user","content":"hi","id":"msg_client"},
      {"type":"message","role":"assistant","content":"yo"},
      {"type":"function_call","call_id":"c1","name":"w","arguments":"{}"},
      {"type":"function_call_output","call_id":"c1","output":"sunny"}]})");
  const Json& items = r.input_items;
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0]["id"], "msg_client");
  EXPECT_EQ(items[0]["content"][0], (Json{{"type", "input_text"}, {"text", "hi"}}));
  EXPECT_EQ(items[1]["content"][0]["type"], "output_text");
  EXPECT_EQ(items[1]["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(items[2]["type"], "function_call");
  EXPECT_EQ(items[2]["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(items[3]["output"], "sunny");
  EXPECT_EQ(items[3]["id"].get<std::string>().rfind("fco_", 0), 0u);
  for (const Json& i : items) EXPECT_EQ(i["status"], "completed");
  auto s = Parse(R"({"model":"m","input":"hello"})");
  ASSERT_EQ(s.input_items.size(), 1u);
  EXPECT_EQ(s.input_items[0]["role"], "user");
  EXPECT_EQ(s.input_items[0]["content"][0]["text"], "hello");
}

TEST(OpenAiResponsesTest, InputItemsPages) {
  Json items = Json::array();
  for (int i = 0; i < 5; ++i) items.push_back({{"id", fmt::format("i{}", i)}});
  auto page = [&](std::string_view q) {
    auto parsed = ParseInputItemsQuery(q);
    EXPECT_TRUE(std::holds_alternative<InputItemsQuery>(parsed)) << q;
    auto p = InputItemsPage(items, std::get<InputItemsQuery>(parsed));
    EXPECT_TRUE(std::holds_alternative<Json>(p)) << q;
    return std::get<Json>(p);
  };
  Json all = page("");  // newest first
  EXPECT_EQ(all["object"], "list");
  EXPECT_EQ(all["first_id"], "i4");
  EXPECT_EQ(all["last_id"], "i0");
  EXPECT_FALSE(all["has_more"]);
  Json two = page("order=asc&limit=2");
  EXPECT_EQ(two["data"].size(), 2u);
  EXPECT_EQ(two["last_id"], "i1");
  EXPECT_TRUE(two["has_more"]);
  Json next = page("order=asc&limit=2&after=i1&include=x");
  EXPECT_EQ(next["first_id"], "i2");
  EXPECT_TRUE(next["has_more"]);
  Json tail = page("order=asc&after=i4");
  EXPECT_TRUE(tail["data"].empty());
  EXPECT_TRUE(tail["first_id"].is_null());
  for (const char* bad : {"limit=0", "limit=101", "limit=x", "limit=", "order=up"}) {
    auto parsed = ParseInputItemsQuery(bad);
    ASSERT_TRUE(std::holds_alternative<ApiError>(parsed)) << bad;
    EXPECT_EQ(std::get<ApiError>(parsed).http_status, 400);
  }
  auto missing = InputItemsPage(items, InputItemsQuery{.after = "nope"});
  ASSERT_TRUE(std::holds_alternative<ApiError>(missing));
  EXPECT_EQ(std::get<ApiError>(missing).http_status, 404);
}

TEST(OpenAiResponsesTest, RouteMatchesOneIdSegment) {
  EXPECT_TRUE(http::RouteMatches("/v1/responses", "/v1/responses"));
  EXPECT_FALSE(http::RouteMatches("/v1/responses", "/v1/responses/x"));
  EXPECT_TRUE(http::RouteMatches("/v1/responses/", "/v1/responses/resp_1"));
  EXPECT_FALSE(http::RouteMatches("/v1/responses/", "/v1/responses/"));
  EXPECT_FALSE(http::RouteMatches("/v1/responses/", "/v1/responses/a/b"));
  EXPECT_FALSE(http::RouteMatches("/v1/responses/", "/v1/responsesx"));
  EXPECT_TRUE(http::RouteMatches("/v1/responses/{}/input_items", "/v1/responses/r1/input_items"));
  EXPECT_FALSE(http::RouteMatches("/v1/responses/{}/input_items", "/v1/responses//input_items"));
  EXPECT_FALSE(http::RouteMatches("/v1/responses/{}/input_items", "/v1/responses/a/b/input_items"));
  EXPECT_FALSE(http::RouteMatches("/v1/responses/{}/input_items", "/v1/responses/r1/input_itemsx"));
  HeaderGateConfig g;
  g.routes.Add({"/v1/responses/", {"GET", "DELETE"}, false, true});
  http::Request head;
  head.method = "GET";
  head.path = "/v1/responses/resp_1";
  EXPECT_FALSE(CheckHeaders(g, head).has_value());
  head.path = "/v1/responses/a/b";
  EXPECT_EQ(CheckHeaders(g, head)->status, 404);
  head.path = "/v1/responses/resp_1";
  head.method = "POST";
  EXPECT_EQ(CheckHeaders(g, head)->status, 405);
}

}  // namespace
}  // namespace brisk::api
