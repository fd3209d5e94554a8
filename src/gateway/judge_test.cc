// The judge's pure parts (validity, exact agreement, prompt, verdict parsing,
// combining two orders, Score, Wilson interval) without a model, and
// Judge::Score against the project's HTTP server playing the judge model.
#include "gateway/judge.h"

#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "http/test_util.h"
#include "http/upstream_client_test_util.h"
#include "util/wilson.h"

namespace brisk::gateway {
namespace {

using Json = nlohmann::json;
using http::test_util::kWait;
using http::test_util::MustStart;

Json Chat(std::string text, Json extra = Json::object()) {
  Json body = {{"messages", {{{"role", "user"}, {"content", std::move(text)}}}}};
  body.update(extra);
  return body;
}

const Json kNameSchema = {
    {"type", "object"}, {"properties", {{"name", {{"type", "string"}}}}}, {"required", {"name"}}};

Json SchemaRequest() {
  return Chat(
      "name?",
      {{"response_format",
        {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", kNameSchema}}}}}});
}

TEST(JudgeValidity, UnconstrainedRequestIsMinusOne) {
  EXPECT_EQ(StructuredValidity(Chat("hi"), "anything"), -1);
  EXPECT_EQ(StructuredValidity(Chat("hi", {{"response_format", {{"type", "text"}}}}), "x"), -1);
  Json none = Chat("hi", {{"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
                          {"tool_choice", "none"}});
  EXPECT_EQ(StructuredValidity(none, "text"), -1);
}

TEST(JudgeValidity, JsonSchemaAndJsonObject) {
  EXPECT_EQ(StructuredValidity(SchemaRequest(), R"({"name": "Ann"})"), 1);
  EXPECT_EQ(StructuredValidity(SchemaRequest(), R"({"nom": "Ann"})"), 0);
  EXPECT_EQ(StructuredValidity(SchemaRequest(), "Ann"), 0);
  Json obj = Chat("x", {{"response_format", {{"type", "json_object"}}}});
  EXPECT_EQ(StructuredValidity(obj, "[1]"), 1);
  EXPECT_EQ(StructuredValidity(obj, "1"), 0);
  // vLLM's spellings: a schema object or its JSON text.
  EXPECT_EQ(StructuredValidity(Chat("x", {{"guided_json", kNameSchema}}), R"({"name":"a"})"), 1);
  EXPECT_EQ(StructuredValidity(Chat("x", {{"guided_json", kNameSchema.dump()}}), "{}"), 0);
  EXPECT_EQ(StructuredValidity(Chat("x", {{"structured_outputs", {{"json_object", true}}}}), "{}"),
            1);
}

TEST(JudgeValidity, ChoiceAndRegex) {
  Json choice = Chat("x", {{"guided_choice", {"yes", "no"}}});
  EXPECT_EQ(StructuredValidity(choice, "yes"), 1);
  EXPECT_EQ(StructuredValidity(choice, "maybe"), 0);
  Json so = Chat("x", {{"structured_outputs", {{"choice", {"a"}}}}});
  EXPECT_EQ(StructuredValidity(so, "a"), 1);
  Json regex = Chat("x", {{"guided_regex", R"(\d{4}-\d{2})"}});
  EXPECT_EQ(StructuredValidity(regex, "2024-05"), 1);
  EXPECT_EQ(StructuredValidity(regex, "2024-05 and more"), 0);  // whole match
  EXPECT_EQ(StructuredValidity(regex, "x2024-05"), 0);
  Json bad = Chat("x", {{"structured_outputs", {{"regex", "("}}}});
  EXPECT_EQ(StructuredValidity(bad, "("), -1);  // a pattern that does not compile
}

TEST(JudgeValidity, ToolCalls) {
  Json tools = Json::array(
      {{{"type", "function"}, {"function", {{"name", "weather"}, {"parameters", kNameSchema}}}}});
  Json req = Chat("weather?", {{"tools", tools}});
  auto call = [](std::string name, std::string args) {
    return Json::array({{{"id", "call_1"},
                         {"type", "function"},
                         {"function", {{"name", name}, {"arguments", args}}}}})
        .dump();
  };
  EXPECT_EQ(StructuredValidity(req, call("weather", R"({"name":"Oslo"})")), 1);
  EXPECT_EQ(StructuredValidity(req, call("weather", R"({"city":"Oslo"})")), 0);
  EXPECT_EQ(StructuredValidity(req, call("stocks", R"({"name":"Oslo"})")), 0);
  EXPECT_EQ(StructuredValidity(req, call("weather", "not json")), 0);
  EXPECT_EQ(StructuredValidity(req, "It is sunny."), 1);  // tool_choice auto: text is fine
  req["tool_choice"] = "required";
  EXPECT_EQ(StructuredValidity(req, "It is sunny."), 0);
}

TEST(JudgeExact, OnlyForGreedyRequests) {
  EXPECT_EQ(ExactAgreement(Chat("x"), "a", "a"), -1);  // temperature absent = 1
  EXPECT_EQ(ExactAgreement(Chat("x", {{"temperature", 0.7}}), "a", "a"), -1);
  EXPECT_EQ(ExactAgreement(Chat("x", {{"temperature", 0}}), "a b\n", " a b"), 1);
  EXPECT_EQ(ExactAgreement(Chat("x", {{"temperature", 0.0}}), "a b", "a  b"), 0);
  EXPECT_EQ(ExactAgreement(Chat("x", {{"top_k", 1}}), "same", "same"), 1);
}

TEST(JudgeExact, JsonComparesParsedAndToolCallsIgnoreIds) {
  Json req = SchemaRequest();
  req["temperature"] = 0;
  EXPECT_EQ(ExactAgreement(req, R"({"name":"a","x":1})", "{ \"x\": 1, \"name\": \"a\" }"), 1);
  EXPECT_EQ(ExactAgreement(req, R"({"name":"a"})", R"({"name":"b"})"), 0);
  Json tools = Chat("x", {{"temperature", 0},
                          {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}}});
  const std::string a =
      R"([{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"k\":1}"}}])";
  const std::string b =
      R"([{"id":"call_9","type":"function","function":{"name":"f","arguments":"{ \"k\": 1 }"}}])";
  EXPECT_EQ(ExactAgreement(tools, a, b), 1);
  EXPECT_EQ(ExactAgreement(tools, a, "text"), 0);
}

TEST(JudgeScore, StructureDecidesWithoutTheLlm) {
  JudgeVerdict v = CheckPair({SchemaRequest(), R"({"name":"a"})", "oops"});
  EXPECT_EQ(v.baseline_valid, 1);
  EXPECT_EQ(v.candidate_valid, 0);
  EXPECT_FALSE(NeedsLlm(v));
  EXPECT_TRUE(v.Decided());
  EXPECT_EQ(v.Score(), 0);
  JudgeVerdict w = CheckPair({SchemaRequest(), "oops", R"({"name":"a"})"});
  EXPECT_EQ(w.Score(), 1);
  // Both invalid or both valid: the LLM decides.
  EXPECT_TRUE(NeedsLlm(CheckPair({SchemaRequest(), "x", "y"})));
}

TEST(JudgeScore, ExactAgreementIsATie) {
  JudgeVerdict v = CheckPair({Chat("2+2?", {{"temperature", 0}}), "4", "4"});
  EXPECT_EQ(v.exact_agree, 1);
  EXPECT_FALSE(NeedsLlm(v));
  EXPECT_EQ(v.Score(), 0.5);
  JudgeVerdict w = CheckPair({Chat("2+2?", {{"temperature", 0}}), "4", "5"});
  EXPECT_EQ(w.exact_agree, 0);
  EXPECT_TRUE(NeedsLlm(w));
  EXPECT_FALSE(w.Decided());  // the LLM has not run
  EXPECT_EQ(w.Score(), 0.5);
}

TEST(JudgeCombine, EveryPairOfOrders) {
  using W = JudgeWinner;
  struct Case {
    W baseline_first, candidate_first;
    int llm;
    bool inconsistent;
    double score;
  };
  const Case cases[] = {
      {W::kB, W::kA, +1, false, 1},      {W::kA, W::kB, -1, false, 0},
      {W::kA, W::kA, 0, true, 0.5},      {W::kB, W::kB, 0, true, 0.5},
      {W::kTie, W::kTie, 0, false, 0.5}, {W::kTie, W::kA, 0, false, 0.5},
      {W::kB, W::kTie, 0, false, 0.5},
  };
  for (const Case& c : cases) {
    JudgeVerdict v;
    CombineOrders(c.baseline_first, c.candidate_first, &v);
    SCOPED_TRACE(std::string(WinnerName(c.baseline_first)) + "/" +
                 std::string(WinnerName(c.candidate_first)));
    EXPECT_TRUE(v.llm_ran);
    EXPECT_EQ(v.llm, c.llm);
    EXPECT_EQ(v.position_inconsistent, c.inconsistent);
    EXPECT_EQ(v.Score(), c.score);
    EXPECT_EQ(v.winner_baseline_first, WinnerName(c.baseline_first));
  }
}

std::string ChatResponse(std::string content) {
  return Json{
      {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}}}}}
      .dump();
}

TEST(JudgeParse, VerdictJsonOrABareWord) {
  auto w = ParseJudgeResponse(ChatResponse(R"({"winner":"B"})"));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*w, JudgeWinner::kB);
  EXPECT_EQ(*ParseJudgeResponse(ChatResponse(R"({ "winner" : "tie" })")), JudgeWinner::kTie);
  EXPECT_EQ(*ParseJudgeResponse(ChatResponse(" A.\n")), JudgeWinner::kA);
  EXPECT_FALSE(ParseJudgeResponse(ChatResponse(R"({"winner":"C"})")).ok());
  EXPECT_FALSE(ParseJudgeResponse(ChatResponse("Answer A is better")).ok());
  EXPECT_FALSE(ParseJudgeResponse("<html>").ok());
}

TEST(JudgePrompt, HoldsRequestAnswersAndTheFormat) {
  const std::string p = JudgePrompt(SchemaRequest(), "first", "second", 4000);
  EXPECT_NE(p.find("user: name?"), std::string::npos) << p;
  EXPECT_NE(p.find("must be JSON"), std::string::npos) << p;
  EXPECT_LT(p.find("[Answer A]\nfirst"), p.find("[Answer B]\nsecond"));
  const std::string cut = JudgePrompt(Chat("x"), std::string(100, 'a'), "b", 10);
  EXPECT_NE(cut.find("[... 90 more bytes cut]"), std::string::npos) << cut;
  JudgeOptions opts;
  Json body = JudgeRequestBody("judge-model", Chat("x"), "a", "b", opts);
  EXPECT_EQ(body["model"], "judge-model");
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(body["seed"], 1234);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["response_format"]["json_schema"]["schema"]["properties"]["winner"]["enum"],
            Json({"A", "B", "tie"}));
  // Completions requests show their prompt.
  EXPECT_NE(JudgePrompt({{"prompt", "Once upon"}}, "a", "b", 100).find("Once upon"),
            std::string::npos);
}

TEST(JudgeAnswerText, ContentToolCallsOrCompletionText) {
  EXPECT_EQ(JudgeAnswerText(Json::parse(ChatResponse("hi"))), "hi");
  Json calls = Json::parse(R"({"choices":[{"message":{"content":null,"tool_calls":[
      {"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}}]})");
  EXPECT_EQ(Json::parse(JudgeAnswerText(calls))[0]["function"]["name"], "f");
  EXPECT_EQ(JudgeAnswerText(Json::parse(R"({"choices":[{"text":"t"}]})")), "t");
  EXPECT_EQ(JudgeAnswerText(Json::parse(R"({"error":{}})")), "");
}

TEST(JudgeWilson, WinRateIsTheMeanAndItsWilsonInterval) {
  // The interval's own values are tested in util/wilson_test.cc.
  const std::pair<double, int64_t> cases[] = {{5, 10}, {8, 10}, {0, 10}, {10, 10}, {50, 100}};
  for (const auto& [sum, n] : cases) {
    WinRate w = WilsonInterval(sum, n);
    const WilsonBounds b = WilsonScoreInterval(sum, n, kWilsonZ95TwoSided);
    EXPECT_EQ(w.n, n);
    EXPECT_NEAR(w.mean, sum / n, 1e-12);
    EXPECT_EQ(w.lower, b.lower) << sum << "/" << n;
    EXPECT_EQ(w.upper, b.upper) << sum << "/" << n;
  }
  // Ties count half: 3 wins and 4 ties of 10 is a mean of 0.5, the
  // interval of 5 of 10.
  EXPECT_NEAR(WilsonInterval(3 + 4 * 0.5, 10).lower, 0.2366, 1e-4);
  WinRate none = WilsonInterval(0, 0);
  EXPECT_EQ(none.n, 0);
  EXPECT_EQ(none.mean, 0);
  EXPECT_EQ(none.lower, 0);
  EXPECT_EQ(none.upper, 1);
}

// --- Judge::Score against an HTTP server playing the judge model. ---

using JudgeTest = http::test_util::UpstreamClientTest;

// A judge that knows the right answer: the one that says "correct" wins,
// wherever it stands. `always` (when set) is answered instead.
http::Handler OracleJudge(std::string always = "") {
  return [always](http::Request&& req, std::shared_ptr<http::Responder> res) {
    Json body = Json::parse(req.body, nullptr, false);
    const std::string prompt = body["messages"][1]["content"];
    const size_t a = prompt.find("[Answer A]\ncorrect"), b = prompt.find("[Answer B]\ncorrect");
    std::string winner = a != std::string::npos ? "A" : b != std::string::npos ? "B" : "tie";
    if (!always.empty()) winner = always;
    res->Send(200, {{"Content-Type", "application/json"}},
              ChatResponse(Json{{"winner", winner}}.dump()));
  };
}

JudgeVerdict ScoreBlocking(Judge& judge, JudgePair pair) {
  std::promise<JudgeVerdict> promise;
  auto future = promise.get_future();
  judge.Score(std::move(pair), [&promise](JudgeVerdict v) { promise.set_value(std::move(v)); });
  EXPECT_EQ(future.wait_for(kWait), std::future_status::ready);
  return future.get();
}

TEST_F(JudgeTest, BothOrdersAgreeOnTheBetterAnswer) {
  auto server = MustStart({}, OracleJudge());
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  Judge judge(client.get(), "m", {});
  JudgeVerdict win = ScoreBlocking(judge, {Chat("q"), "wrong", "correct"});
  EXPECT_TRUE(win.llm_ran) << win.llm_error;
  EXPECT_EQ(win.llm, 1);
  EXPECT_EQ(win.winner_baseline_first, "B");
  EXPECT_EQ(win.winner_candidate_first, "A");
  EXPECT_EQ(win.Score(), 1);
  JudgeVerdict loss = ScoreBlocking(judge, {Chat("q"), "correct", "wrong"});
  EXPECT_EQ(loss.llm, -1);
  EXPECT_EQ(loss.Score(), 0);
  EXPECT_FALSE(loss.position_inconsistent);
}

TEST_F(JudgeTest, AJudgeThatAlwaysPicksAIsPositionInconsistent) {
  auto server = MustStart({}, OracleJudge("A"));
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  Judge judge(client.get(), "m", {});
  JudgeVerdict v = ScoreBlocking(judge, {Chat("q"), "wrong", "correct"});
  EXPECT_TRUE(v.llm_ran);
  EXPECT_TRUE(v.position_inconsistent);
  EXPECT_EQ(v.llm, 0);
  EXPECT_EQ(v.Score(), 0.5);
}

TEST_F(JudgeTest, FailuresLeaveTheLlmNotRun) {
  auto server = MustStart({}, [](http::Request&&, std::shared_ptr<http::Responder> res) {
    res->Send(503, {}, "draining");
  });
  ASSERT_TRUE(server);
  auto client = MakeClient(server->port());
  Judge judge(client.get(), "m", {});
  JudgeVerdict v = ScoreBlocking(judge, {Chat("q"), "a", "b"});
  EXPECT_FALSE(v.llm_ran);
  EXPECT_NE(v.llm_error.find("HTTP 503"), std::string::npos) << v.llm_error;
  EXPECT_FALSE(v.Decided());
  // Nobody listening: a connect failure, also a verdict without the LLM.
  const int port = server->port();
  server.reset();
  auto gone = MakeClient(port);
  Judge judge2(gone.get(), "m", {});
  JudgeVerdict w = ScoreBlocking(judge2, {Chat("q"), "a", "b"});
  EXPECT_FALSE(w.llm_ran);
  EXPECT_FALSE(w.llm_error.empty());
  // A verdict the structure decides needs no judge at all.
  Judge none(nullptr, "m", {});
  EXPECT_EQ(ScoreBlocking(none, {SchemaRequest(), R"({"name":"a"})", "x"}).Score(), 0);
}

}  // namespace
}  // namespace brisk::gateway
