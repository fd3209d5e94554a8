#include "http/chunked_guard.h"

#include <gtest/gtest.h>

#include <string>

namespace brisk::http::internal {
namespace {

using V = ChunkedGuard::Verdict;

ChunkedLimits Small() { return ChunkedLimits{16, 100, 32, 3}; }

// Feeds `s` one byte at a time: the verdict must not depend on how bytes arrive.
ChunkedGuard::Result FeedBytewise(ChunkedGuard& g, std::string_view s) {
  size_t used = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    auto r = g.Feed(s.substr(i, 1));
    used += r.used;
    if (r.verdict != V::kMore) return {r.verdict, used};
  }
  return {V::kMore, used};
}

TEST(ChunkedGuard, WellFormedBodyEndsWhereItEnds) {
  const std::string body = "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nT: v\r\n\r\n";
  for (bool bytewise : {false, true}) {
    ChunkedGuard g(Small());
    auto r = bytewise ? FeedBytewise(g, body + "GET / HTTP/1.1\r\n")
                      : g.Feed(body + "GET / HTTP/1.1\r\n");
    EXPECT_EQ(r.verdict, V::kDone);
    EXPECT_EQ(r.used, body.size());
    EXPECT_EQ(g.trailer_bytes(), 8u);  // "T: v\r\n\r\n"
    EXPECT_EQ(g.body_bytes(), body.size() - 8);
    EXPECT_EQ(g.Feed("more").verdict, V::kDone);
  }
}

TEST(ChunkedGuard, LongChunkLineIsRefused) {
  ChunkedGuard g(Small());
  auto r = g.Feed("1;xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  EXPECT_EQ(r.verdict, V::kLineTooLong);
  EXPECT_EQ(r.used, 17u);
  EXPECT_EQ(g.Feed("\r\n").verdict, V::kLineTooLong);
  ChunkedGuard zeros(Small());
  EXPECT_EQ(FeedBytewise(zeros, std::string(100, '0')).verdict, V::kLineTooLong);
  ChunkedGuard bare_lf(Small());  // a bare LF does not end a line
  EXPECT_EQ(bare_lf.Feed("1\n" + std::string(20, 'a')).verdict, V::kLineTooLong);
}

TEST(ChunkedGuard, FramingCountsTowardTheBody) {
  ChunkedGuard g(Small());
  std::string body;
  for (int i = 0; i < 20; ++i) body += "1\r\na\r\n";  // 20 bytes of data, 120 on the wire
  auto r = g.Feed(body);
  EXPECT_EQ(r.verdict, V::kBodyTooLarge);
  EXPECT_LE(g.body_bytes(), 101u);
}

TEST(ChunkedGuard, ChunkSizePastTheLimitIsRefusedAtItsLineEnd) {
  ChunkedGuard g(Small());
  EXPECT_EQ(g.Feed("ffffffffffffff").verdict, V::kMore);  // saturates, no overflow
  EXPECT_EQ(g.Feed("\r\n").verdict, V::kBodyTooLarge);
  ChunkedGuard fits(Small());
  EXPECT_EQ(fits.Feed("5e\r\n").verdict, V::kMore);  // 4 + 94 + 2 = 100
  ChunkedGuard over(Small());
  EXPECT_EQ(over.Feed("5f\r\n").verdict, V::kBodyTooLarge);
}

TEST(ChunkedGuard, TrailerSizeAndCountAreBounded) {
  ChunkedGuard big(Small());
  EXPECT_EQ(big.Feed("0\r\nX: " + std::string(40, 'v')).verdict, V::kTrailerTooLarge);
  ChunkedGuard many(Small());
  EXPECT_EQ(many.Feed("0\r\na:\r\nb:\r\nc:\r\nd:\r\n\r\n").verdict, V::kTooManyTrailerFields);
  ChunkedGuard three(Small());
  EXPECT_EQ(three.Feed("0\r\na:\r\nb:\r\nc:\r\n\r\n").verdict, V::kDone);
}

}  // namespace
}  // namespace brisk::http::internal
