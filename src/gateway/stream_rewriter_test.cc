#include "gateway/stream_rewriter.h"

#include <gtest/gtest.h>

namespace brisk::gateway {
namespace {

using Json = nlohmann::json;

std::string Chunk(const std::string& content, const char* finish, bool usage, int completion) {
  Json c = {{"id", "c1"},
            {"object", "chat.completion.chunk"},
            {"choices",
             {{{"index", 0},
               {"delta", {{"content", content}}},
               {"logprobs", nullptr},
               {"finish_reason", finish ? Json(finish) : Json()}}}}};
  if (usage) {
    c["usage"] = {{"prompt_tokens", 10},
                  {"completion_tokens", completion},
                  {"prompt_tokens_details", {{"cached_tokens", 4}}}};
  }
  return "data: " + c.dump() + "\n\n";
}

std::string UsageChunk(int completion) {
  Json c = {{"id", "c1"},
            {"object", "chat.completion.chunk"},
            {"choices", Json::array()},
            {"usage",
             {{"prompt_tokens", 10},
              {"completion_tokens", completion},
              {"prompt_tokens_details", {{"cached_tokens", 4}}}}}};
  return "data: " + c.dump() + "\n\n";
}

std::vector<Json> Events(const std::string& sse) {
  std::vector<Json> out;
  size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    size_t end = sse.find("\n\n", pos);
    std::string data = sse.substr(pos + 6, end - pos - 6);
    out.push_back(data == "[DONE]" ? Json("[DONE]") : Json::parse(data));
    pos = end;
  }
  return out;
}

TEST(StreamRewriter, StripsUsageTheClientDidNotAskFor) {
  StreamRewriter rw(ClientWants{});
  std::string up = Chunk("Hel", nullptr, true, 1) + Chunk("lo", "stop", true, 2) + UsageChunk(2) +
                   "data: [DONE]\n\n";
  std::string out;
  // Byte by byte: events cross every boundary.
  bool done = false;
  for (char ch : up) done = rw.Feed(std::string_view(&ch, 1), &out) || done;
  EXPECT_TRUE(done);
  out += rw.Finish(CostAnnotation{0.5, "small", 0});
  std::vector<Json> ev = Events(out);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_FALSE(ev[0].contains("usage"));
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["content"], "Hel");
  EXPECT_EQ(ev[1]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(ev[2], "[DONE]");
  const AnswerFacts& f = rw.facts();
  EXPECT_EQ(f.tokens.prompt, 10);
  EXPECT_EQ(f.tokens.cached, 4);
  EXPECT_EQ(f.tokens.output, 2);
  EXPECT_EQ(f.text, "Hello");
  EXPECT_EQ(f.finish_reason, "stop");
  EXPECT_EQ(f.content_chunks, 2);
}

TEST(StreamRewriter, FinalUsageChunkCarriesTheCost) {
  StreamRewriter rw(ClientWants{.include_usage = true});
  std::string out;
  rw.Feed(Chunk("Hi", "stop", true, 1) + UsageChunk(1) + "data: [DONE]\n\n", &out);
  out += rw.Finish(CostAnnotation{0.25, "medium", 1});
  std::vector<Json> ev = Events(out);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_FALSE(ev[0].contains("usage"));  // continuous usage only when asked
  EXPECT_TRUE(ev[1]["choices"].empty());
  EXPECT_EQ(ev[1]["usage"]["completion_tokens"], 1);
  EXPECT_DOUBLE_EQ(ev[1]["usage"]["cost_usd"].get<double>(), 0.25);
  EXPECT_EQ(ev[1]["usage"]["tier"], "medium");
  EXPECT_EQ(ev[1]["usage"]["escalations"], 1);
  EXPECT_EQ(ev[2], "[DONE]");
}

// Found by gateway_parsers_fuzz: an upstream whose final chunk carries a
// number under "usage" made Finish() index a number and throw.
TEST(StreamRewriter, NonObjectUsageStillGetsTheCost) {
  StreamRewriter rw(ClientWants{.include_usage = true});
  std::string out;
  rw.Feed("data: {\"choices\":[],\"usage\":3}\n\ndata: [DONE]\n\n", &out);
  out += rw.Finish(CostAnnotation{0.5, "small", 0});
  std::vector<Json> ev = Events(out);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_DOUBLE_EQ(ev[0]["usage"]["cost_usd"].get<double>(), 0.5);
  EXPECT_EQ(ev[0]["usage"]["tier"], "small");
}

TEST(StreamRewriter, KeepsContinuousUsageWhenAsked) {
  StreamRewriter rw(ClientWants{.include_usage = true, .continuous_usage = true});
  std::string out;
  rw.Feed(Chunk("Hi", nullptr, true, 1), &out);
  EXPECT_EQ(Events(out)[0]["usage"]["completion_tokens"], 1);
  EXPECT_TRUE(rw.started());
}

TEST(StreamRewriter, CancelledStreamKnowsTokensSoFar) {
  StreamRewriter rw(ClientWants{});
  std::string out;
  rw.Feed(Chunk("a", nullptr, true, 1) + Chunk("b", nullptr, true, 2) +
              Chunk("c", nullptr, true, 3).substr(0, 20),
          &out);
  EXPECT_EQ(rw.facts().tokens.output, 2);
  EXPECT_EQ(rw.facts().tokens.prompt, 10);
}

TEST(ReadAnswer, ChatAndCompletionsWithLogprobs) {
  Json chat = {{"choices",
                {{{"index", 0},
                  {"message", {{"role", "assistant"}, {"content", "{\"a\":1}"}}},
                  {"logprobs",
                   {{"content",
                     {{{"token", "{"}, {"logprob", -0.5}}, {{"token", "}"}, {"logprob", -1.5}}}}}},
                  {"finish_reason", "stop"}}}},
               {"usage", {{"prompt_tokens", 7}, {"completion_tokens", 2}}}};
  AnswerFacts f = ReadAnswer(chat);
  EXPECT_EQ(f.text, "{\"a\":1}");
  EXPECT_EQ(f.logprob_count, 2);
  EXPECT_DOUBLE_EQ(f.logprob_sum, -2.0);
  EXPECT_EQ(f.tokens.prompt, 7);
  EXPECT_EQ(f.tokens.cached, 0);
  Json comp = {{"choices",
                {{{"index", 0},
                  {"text", "hi"},
                  {"logprobs", {{"token_logprobs", {-0.1, -0.2, nullptr}}}},
                  {"finish_reason", "length"}}}}};
  f = ReadAnswer(comp);
  EXPECT_EQ(f.text, "hi");
  EXPECT_EQ(f.logprob_count, 2);
  EXPECT_EQ(f.finish_reason, "length");
  EXPECT_FALSE(f.usage_seen);
}

TEST(AnnotateAnswer, AddsCostAndDropsLogprobsTheGatewayAskedFor) {
  Json body = {{"choices", {{{"index", 0}, {"logprobs", {{"content", Json::array()}}}}}},
               {"usage", {{"prompt_tokens", 1}}}};
  AnnotateAnswer(&body, CostAnnotation{1.5, "large", 2}, /*keep_logprobs=*/false);
  EXPECT_TRUE(body["choices"][0]["logprobs"].is_null());
  EXPECT_DOUBLE_EQ(body["usage"]["cost_usd"].get<double>(), 1.5);
  EXPECT_EQ(body["usage"]["escalations"], 2);
  EXPECT_EQ(body["usage"]["prompt_tokens"], 1);
}

TEST(AnswerAsStream, ReplaysAWholeAnswerAsChunks) {
  Json body = {{"id", "x"},
               {"created", 5},
               {"model", "m"},
               {"choices",
                {{{"index", 0},
                  {"message", {{"role", "assistant"}, {"content", "Hello"}}},
                  {"finish_reason", "stop"}}}},
               {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 1}}}};
  std::string sse = AnswerAsStream(body, true, ClientWants{.include_usage = true},
                                   CostAnnotation{0.1, "small", 0});
  std::vector<Json> ev = Events(sse);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["content"], "Hello");
  EXPECT_EQ(ev[1]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(ev[2]["usage"]["prompt_tokens"], 3);
  EXPECT_DOUBLE_EQ(ev[2]["usage"]["cost_usd"].get<double>(), 0.1);
  EXPECT_EQ(ev[3], "[DONE]");
  std::string text =
      AnswerAsStream({{"choices", {{{"index", 0}, {"text", "abc"}, {"finish_reason", "length"}}}}},
                     false, ClientWants{}, CostAnnotation{});
  std::vector<Json> tev = Events(text);
  ASSERT_EQ(tev.size(), 3u);
  EXPECT_EQ(tev[0]["object"], "text_completion");
  EXPECT_EQ(tev[0]["choices"][0]["text"], "abc");
}

std::string ResponsesEvent(const std::string& type, Json fields) {
  fields["type"] = type;
  return "event: " + type + "\ndata: " + fields.dump() + "\n\n";
}

Json ResponseObject(const char* status) {
  return {{"id", "resp_1"},
          {"object", "response"},
          {"status", status},
          {"store", false},
          {"previous_response_id", nullptr},
          {"output",
           {{{"type", "message"},
             {"id", "msg_1"},
             {"role", "assistant"},
             {"content", {{{"type", "output_text"}, {"text", "Hi there"}}}}}}},
          {"usage",
           {{"input_tokens", 20},
            {"input_tokens_details", {{"cached_tokens", 8}}},
            {"output_tokens", 3}}}};
}

TEST(StreamRewriter, ResponsesEventsArePatchedAndTheFinalOneHeld) {
  StreamRewriter rw(ResponsePatch{true, "resp_0"});
  std::string out;
  const std::string stream =
      ResponsesEvent("response.created", {{"response", ResponseObject("in_progress")}}) +
      ResponsesEvent("response.output_text.delta", {{"delta", "Hi"}}) +
      ResponsesEvent("response.output_text.delta", {{"delta", " there"}}) +
      ResponsesEvent("response.completed", {{"response", ResponseObject("completed")}});
  // Fed in two pieces cut inside an event.
  EXPECT_FALSE(rw.Feed(stream.substr(0, 70), &out));
  EXPECT_FALSE(rw.Feed(stream.substr(70), &out));
  EXPECT_TRUE(rw.started());
  EXPECT_EQ(out.find("response.completed"), std::string::npos);  // held
  EXPECT_NE(out.find(R"("previous_response_id":"resp_0")"), std::string::npos);
  EXPECT_NE(out.find(R"("store":true)"), std::string::npos);
  EXPECT_EQ(rw.facts().content_chunks, 2);
  EXPECT_EQ(rw.facts().tokens.prompt, 20);
  EXPECT_EQ(rw.facts().tokens.cached, 8);
  EXPECT_EQ(rw.facts().tokens.output, 3);
  EXPECT_EQ(rw.facts().finish_reason, "stop");
  EXPECT_EQ(rw.facts().text, "Hi there");
  const std::string tail = rw.Finish({0.5, "small", 0});
  EXPECT_TRUE(tail.starts_with("event: response.completed\ndata: ")) << tail;
  EXPECT_EQ(tail.find("[DONE]"), std::string::npos);
  ASSERT_NE(rw.final_response(), nullptr);
  EXPECT_EQ((*rw.final_response())["usage"]["cost_usd"], 0.5);
  EXPECT_EQ((*rw.final_response())["previous_response_id"], "resp_0");
}

TEST(ReadResponseObject, IncompleteIsLengthAndNoUsageIsNotSeen) {
  Json r = ResponseObject("incomplete");
  r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  AnswerFacts f = ReadResponseObject(r);
  EXPECT_EQ(f.finish_reason, "length");
  EXPECT_TRUE(f.usage_seen);
  r.erase("usage");
  EXPECT_FALSE(ReadResponseObject(r).usage_seen);
  EXPECT_FALSE(ReadResponseObject(Json("garbage")).usage_seen);
  Json patched = Json::array();
  PatchResponse(&patched, {}, nullptr);  // not an object: left alone
  EXPECT_TRUE(patched.is_array());
}

TEST(CostUsd, PricesEachKindOfToken) {
  Prices p{1.0, 0.1, 4.0};
  EXPECT_DOUBLE_EQ(CostUsd(p, TokenCounts{1000000, 0, 0}), 1.0);
  EXPECT_DOUBLE_EQ(CostUsd(p, TokenCounts{1000, 400, 250}),
                   (600 * 1.0 + 400 * 0.1 + 250 * 4.0) / 1e6);
  EXPECT_DOUBLE_EQ(CostUsd(p, TokenCounts{10, 50, 0}), 10 * 0.1 / 1e6);  // cached clamped
}

}  // namespace
}  // namespace brisk::gateway
