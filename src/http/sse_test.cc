#include "http/sse.h"

#include <gtest/gtest.h>

namespace brisk::http {
namespace {

std::vector<SseEvent> ParseInPieces(std::string_view text, const std::vector<size_t>& cuts) {
  SseParser p;
  std::vector<SseEvent> out;
  size_t pos = 0;
  for (size_t cut : cuts) {
    p.Feed(text.substr(pos, cut - pos), &out);
    pos = cut;
  }
  p.Feed(text.substr(pos), &out);
  p.Finish(&out);
  return out;
}

bool Same(const std::vector<SseEvent>& a, const std::vector<SseEvent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].event != b[i].event || a[i].data != b[i].data) return false;
  return true;
}

// LF, CRLF and CR endings, a comment, multi-line data, an event name,
// llama-server's "error:" line, a field without a value, unknown fields.
constexpr std::string_view kStream =
    ": keep-alive comment\r\n"
    "data: {\"choices\":[{\"text\":\"Hello\"}]}\r\n\r\n"
    "data:{\"choices\":[{\"text\":\" world\"}]}\n\n"
    "event: ping\n"
    "data: line one\n"
    "data: line two\n"
    "id: 7\n"
    "retry: 100\n"
    "\n"
    "data\r\r"
    "error: {\"code\":500,\"message\":\"boom\"}\n\n"
    "data: [DONE]\n\n";

void ExpectStreamEvents(const std::vector<SseEvent>& ev) {
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[0].data, R"({"choices":[{"text":"Hello"}]})");
  EXPECT_EQ(ev[0].event, "");
  EXPECT_EQ(ev[1].data, R"({"choices":[{"text":" world"}]})");
  EXPECT_EQ(ev[2].event, "ping");
  EXPECT_EQ(ev[2].data, "line one\nline two");
  EXPECT_EQ(ev[3].data, "");  // "data" with no colon: an empty data line
  EXPECT_EQ(ev[4].event, "error");
  EXPECT_EQ(ev[4].data, R"({"code":500,"message":"boom"})");
  EXPECT_EQ(ev[5].data, "[DONE]");
}

TEST(SseParser, WholeStream) { ExpectStreamEvents(ParseInPieces(kStream, {})); }

TEST(SseParser, SplitAtEveryByteBoundary) {
  const auto whole = ParseInPieces(kStream, {});
  for (size_t cut = 1; cut < kStream.size(); ++cut)
    ASSERT_TRUE(Same(ParseInPieces(kStream, {cut}), whole)) << "cut at " << cut;
  for (size_t a = 1; a < kStream.size(); a += 3)
    for (size_t b = a; b < kStream.size(); b += 5)
      ASSERT_TRUE(Same(ParseInPieces(kStream, {a, b}), whole)) << a << "," << b;
}

TEST(SseParser, ByteByByte) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  ExpectStreamEvents(ParseInPieces(kStream, cuts));
}

TEST(SseParser, CrLfSplitBetweenPiecesIsOneLineEnd) {
  SseParser p;
  std::vector<SseEvent> out;
  p.Feed("data: a\r", &out);
  p.Feed("\n\r", &out);
  EXPECT_EQ(out.size(), 1u);
  p.Feed("\n", &out);  // LF of the second CRLF, not another blank line
  p.Feed("data: b\r\n\r\n", &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].data, "b");
}

TEST(SseParser, EventsOnlyOnBlankLineButFinishFlushesTheLast) {
  SseParser p;
  std::vector<SseEvent> out;
  p.Feed("data: partial", &out);
  EXPECT_TRUE(out.empty());
  p.Feed("\n", &out);
  EXPECT_TRUE(out.empty());
  p.Finish(&out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, "partial");
  // A blank line with no data dispatches nothing.
  p.Feed("\n\n: only a comment\n\n", &out);
  p.Finish(&out);
  EXPECT_EQ(out.size(), 1u);
}

}  // namespace
}  // namespace brisk::http
