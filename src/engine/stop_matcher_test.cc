#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace brisk {
namespace {

struct StreamResult {
  std::string emitted;
  bool stopped = false;
  int matched = -1;
};

// Streams `pieces` through a matcher; flushes at the end if no stop.
StreamResult Stream(const std::vector<std::string>& stops, const std::vector<std::string>& pieces) {
  StopMatcher m(stops);
  StreamResult r;
  for (const std::string& p : pieces) {
    StopMatcher::Result res = m.Push(p);
    r.emitted += res.emit;
    if (res.stopped) {
      r.stopped = true;
      break;
    }
  }
  if (!r.stopped) r.emitted += m.Flush();
  r.matched = m.matched_index();
  return r;
}

std::vector<std::string> Bytes(std::string_view s) {
  std::vector<std::string> out;
  for (char c : s) out.emplace_back(1, c);
  return out;
}

TEST(StopMatcherTest, NoStopsPassesThrough) {
  StopMatcher m({});
  auto r = m.Push("hello");
  EXPECT_EQ(r.emit, "hello");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, EmitsEverythingThatCannotStartAStop) {
  StopMatcher m({"END"});
  auto r = m.Push("hello world");
  EXPECT_EQ(r.emit, "hello world");
  EXPECT_FALSE(r.stopped);
  r = m.Push("foo E");
  EXPECT_EQ(r.emit, "foo ");  // "E" could start "END"
  EXPECT_EQ(m.held_bytes(), 1u);
  r = m.Push("N");
  EXPECT_EQ(r.emit, "");
  r = m.Push("X more");  // "ENX" is not a stop: release it
  EXPECT_EQ(r.emit, "ENX more");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, StopInsideOnePiece) {
  StreamResult r = Stream({"</s>"}, {"abc</s>def"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "abc");
  EXPECT_EQ(r.matched, 0);
}

TEST(StopMatcherTest, StopSpanningManyPieces) {
  StreamResult r = Stream({"STOP HERE"}, {"text S", "T", "OP", " H", "ER", "E and after"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "text ");
  // Byte by byte gives the same result.
  r = Stream({"STOP HERE"}, Bytes("text STOP HERE and after"));
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "text ");
}

TEST(StopMatcherTest, StopAtVeryStart) {
  StreamResult r = Stream({"###"}, {"###", "rest"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "");
  r = Stream({"###"}, {"#", "#", "#"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "");
}

TEST(StopMatcherTest, PartialMatchAtEndIsFlushed) {
  StreamResult r = Stream({"STOP"}, {"the end ST", "O"});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.emitted, "the end STO");
}

TEST(StopMatcherTest, FalseStartThenRealMatch) {
  // "aab" with stop "ab": held "a", then "a" again: the first "a" is released.
  StreamResult r = Stream({"ab"}, {"a", "a", "b", "c"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "a");
  // Self-overlapping stop: "aaab" inside "xaaaab".
  r = Stream({"aaab"}, Bytes("xaaaab!"));
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "xa");
}

TEST(StopMatcherTest, OverlappingStopsEarliestEndWinsRegardlessOfChunking) {
  const std::vector<std::string> stops = {"abcd", "bc"};
  // "bc" completes before "abcd" does: same answer in one piece or byte by byte.
  StreamResult whole = Stream(stops, {"xabcdy"});
  StreamResult bytes = Stream(stops, Bytes("xabcdy"));
  EXPECT_TRUE(whole.stopped);
  EXPECT_EQ(whole.emitted, "xa");
  EXPECT_EQ(whole.matched, 1);
  EXPECT_EQ(bytes.emitted, whole.emitted);
  EXPECT_EQ(bytes.matched, whole.matched);
  // Same end: the one that starts first (the longer one) wins.
  StreamResult tie = Stream({"cd", "bcd"}, {"abcde"});
  EXPECT_EQ(tie.emitted, "a");
  EXPECT_EQ(tie.matched, 1);
}

TEST(StopMatcherTest, HoldsBackLongestPossiblePrefixAcrossStops) {
  StopMatcher m({"xyz", "yzw", "zq"});
  auto r = m.Push("abxyz_");  // contains "xyz": stop
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "ab");
  EXPECT_EQ(m.matched_index(), 0);
  EXPECT_TRUE(m.Push("more").stopped);
  EXPECT_EQ(m.Push("more").emit, "");
  EXPECT_EQ(m.Flush(), "");

  StopMatcher h({"xyz", "yzw"});
  r = h.Push("ab yz");  // "yz" is a prefix of "yzw", longer than "z"-nothing
  EXPECT_EQ(r.emit, "ab ");
  EXPECT_EQ(h.held_bytes(), 2u);
  r = h.Push("w");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(h.matched_index(), 1);
}

TEST(StopMatcherTest, Unicode) {
  // "東京" is 6 bytes; pieces split characters mid-way.
  const std::string text = "こんにちは東京タワー";
  StreamResult r = Stream({"東京"}, {"こんにちは\xe6\x9d", "\xb1\xe4", "\xba\xac", "タワー"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "こんにちは");
  r = Stream({"東京"}, Bytes(text));
  EXPECT_EQ(r.emitted, "こんにちは");
  // Shares a lead byte with the stop but is a different character: released whole.
  r = Stream({"東京"}, {"東", "北"});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.emitted, "東北");
  // Emoji stop.
  r = Stream({"🛑"}, {"go go ", "🛑", " never"});
  EXPECT_EQ(r.emitted, "go go ");
  EXPECT_TRUE(r.stopped);
}

TEST(StopMatcherTest, EmptyStopStringsIgnoredIndexPreserved) {
  StopMatcher m({"", "END"});
  auto r = m.Push("aEND");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "a");
  EXPECT_EQ(m.matched_index(), 1);
}

TEST(StopMatcherTest, Validate) {
  EXPECT_TRUE(StopMatcher::Validate({}).ok());
  EXPECT_TRUE(StopMatcher::Validate({"a", "bc"}).ok());
  Status st = StopMatcher::Validate({"a", ""});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("stop[1]"), std::string::npos) << st.message();
  std::vector<std::string> many(StopMatcher::kMaxStops, "x");
  EXPECT_TRUE(StopMatcher::Validate(many).ok());
  many.push_back("y");
  st = StopMatcher::Validate(many);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("at most 16"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace brisk
