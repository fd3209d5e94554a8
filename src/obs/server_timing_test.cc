#include "obs/server_timing.h"

#include <gtest/gtest.h>

namespace brisk {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;

TEST(ServerTiming, StagesFromContiguousBoundariesSumToTheTotal) {
  const Clock::time_point t0{};
  const std::string_view names[] = {"tokenize", "queue", "prefill", "decode", "write"};
  const Clock::time_point b[] = {t0,
                                 t0 + microseconds(410),
                                 t0 + microseconds(430),
                                 t0 + microseconds(12730),
                                 t0 + microseconds(92830),
                                 t0 + microseconds(93030)};
  auto stages = StagesFromBoundaries(names, b);
  ASSERT_EQ(stages.size(), 5u);
  EXPECT_EQ(stages[0].name, "tokenize");
  EXPECT_DOUBLE_EQ(stages[0].ms, 0.41);
  EXPECT_NEAR(stages[1].ms, 0.02, 1e-9);
  EXPECT_NEAR(stages[2].ms, 12.3, 1e-9);
  EXPECT_NEAR(stages[3].ms, 80.1, 1e-9);
  EXPECT_NEAR(stages[4].ms, 0.2, 1e-9);
  EXPECT_NEAR(StagesTotalMs(stages), 93.03, 1e-9);
}

TEST(ServerTiming, ABoundaryBeforeItsPredecessorMakesAZeroStageNotANegativeOne) {
  const Clock::time_point t0{};
  const std::string_view names[] = {"a", "b", "c"};
  // b's end (an engine timestamp) reads earlier than a's end.
  const Clock::time_point b[] = {t0, t0 + microseconds(500), t0 + microseconds(300),
                                 t0 + microseconds(1000)};
  auto stages = StagesFromBoundaries(names, b);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_DOUBLE_EQ(stages[1].ms, 0);
  EXPECT_DOUBLE_EQ(stages[2].ms, 0.5);
  EXPECT_DOUBLE_EQ(StagesTotalMs(stages), 1.0);
}

TEST(ServerTiming, WrongBoundaryCountGivesNothing) {
  const std::string_view names[] = {"a", "b"};
  const Clock::time_point b[] = {Clock::time_point{}, Clock::time_point{}};
  EXPECT_TRUE(StagesFromBoundaries(names, b).empty());
}

TEST(ServerTiming, FormatsMillisecondsWithAtMostThreeDecimals) {
  const std::vector<TimedStage> stages = {
      {"tokenize", 0.41}, {"queue", 0.0204}, {"prefill", 12.3}, {"decode", 80}, {"write", 0.0004}};
  EXPECT_EQ(FormatServerTiming(stages, 93.1234567),
            "tokenize;dur=0.41, queue;dur=0.02, prefill;dur=12.3, decode;dur=80, write;dur=0, "
            "total;dur=93.123");
  EXPECT_EQ(FormatServerTiming(stages), FormatServerTiming(stages, -1));
  EXPECT_EQ(FormatServerTiming({}, 1.5), "total;dur=1.5");
  EXPECT_EQ(FormatServerTiming({}), "");
}

TEST(ServerTiming, ParsesWhatItFormats) {
  const std::vector<TimedStage> stages = {{"tokenize", 0.41}, {"queue", 0.02}, {"prefill", 12.3}};
  auto parsed = ParseServerTiming(FormatServerTiming(stages, 12.73));
  ASSERT_EQ(parsed.size(), 4u);
  EXPECT_EQ(parsed[0], stages[0]);
  EXPECT_EQ(parsed[2], stages[2]);
  EXPECT_EQ(parsed[3].name, "total");
  EXPECT_DOUBLE_EQ(parsed[3].ms, 12.73);
}

TEST(ServerTiming, ParsesOtherServersSyntax) {
  // Descriptions (quoted, with separators inside), parameters in any order,
  // whitespace, a quoted dur, metrics without dur (skipped).
  auto parsed = ParseServerTiming(
      R"(cache;desc="Cache Read, hit";dur=23.2 ,db ; dur = 53, miss, app;dur="47.2";desc=x)");
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[0], (TimedStage{"cache", 23.2}));
  EXPECT_EQ(parsed[1], (TimedStage{"db", 53}));
  EXPECT_EQ(parsed[2], (TimedStage{"app", 47.2}));
}

TEST(ServerTiming, SkipsBadNamesAndDurations) {
  auto parsed = ParseServerTiming(
      "ok;dur=1, bad name;dur=2, neg;dur=-1, nan;dur=nan, junk;dur=1x, first;dur=3;dur=4, ;dur=5");
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0], (TimedStage{"ok", 1}));
  EXPECT_EQ(parsed[1], (TimedStage{"first", 3}));
  EXPECT_TRUE(ParseServerTiming("").empty());
  EXPECT_TRUE(ParseServerTiming(R"(a;desc="unterminated, b;dur=1)").empty());
}

}  // namespace
}  // namespace brisk
