#include "gateway/utc_time.h"

#include <gtest/gtest.h>

namespace brisk::gateway {
namespace {

constexpr int64_t kDec1Ms = 1'796'083'200'000;  // 2026-12-01T00:00:00Z

TEST(UtcTimeTest, DayAndMonthBoundaries) {
  const int64_t t = kDec1Ms + 5 * kMsPerDay + 3'723'004;  // 2026-12-06T01:02:03.004Z
  EXPECT_EQ(FormatRfc3339Ms(t), "2026-12-06T01:02:03.004Z");
  EXPECT_EQ(FormatRfc3339Ms(UtcDayStartMs(t)), "2026-12-06T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Ms(UtcNextDayStartMs(t)), "2026-12-07T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Ms(UtcMonthStartMs(t)), "2026-12-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Ms(UtcNextMonthStartMs(t)), "2027-01-01T00:00:00Z");
  EXPECT_EQ(UtcDayStartMs(kDec1Ms), kDec1Ms);
  EXPECT_EQ(UtcDayStartMs(kDec1Ms - 1), kDec1Ms - kMsPerDay);
  EXPECT_EQ(FormatUtcDate(kDec1Ms - 1), "2026-11-30");
  // February of a leap year.
  auto feb = ParseTimeMs("2028-02-10");
  ASSERT_TRUE(feb.ok());
  EXPECT_EQ(FormatUtcDate(UtcNextMonthStartMs(*feb) - 1), "2028-02-29");
  EXPECT_EQ(FormatRfc3339Ms(0), "1970-01-01T00:00:00Z");
}

TEST(UtcTimeTest, ParsesDatesTimesAndUnixSeconds) {
  bool date_only = false;
  EXPECT_EQ(*ParseTimeMs("2026-12-01", &date_only), kDec1Ms);
  EXPECT_TRUE(date_only);
  EXPECT_EQ(*ParseTimeMs("2026-12-01T00:00:00Z", &date_only), kDec1Ms);
  EXPECT_FALSE(date_only);
  EXPECT_EQ(*ParseTimeMs("2026-12-01t10:30:00z"), kDec1Ms + 37'800'000);
  EXPECT_EQ(*ParseTimeMs("2026-12-01 10:30:00.25Z"), kDec1Ms + 37'800'250);
  EXPECT_EQ(*ParseTimeMs("2026-12-01T12:30:00+02:00"), kDec1Ms + 37'800'000);
  EXPECT_EQ(*ParseTimeMs("2026-11-30T23:00:00-01:00"), kDec1Ms);
  EXPECT_EQ(*ParseTimeMs("2026-12-01T00:00:00.123456Z"), kDec1Ms + 123);
  EXPECT_EQ(*ParseTimeMs("1796083200"), kDec1Ms);
  EXPECT_EQ(*ParseTimeMs("1796083200.5"), kDec1Ms + 500);
  EXPECT_EQ(*ParseTimeMs("0"), 0);
}

TEST(UtcTimeTest, RejectsWhatIsNotATime) {
  for (const char* bad :
       {"", "yesterday", "2026-13-01", "2026-02-30", "2026-12-1", "2026/12/01", "2026-12-01T10:00",
        "2026-12-01T10:00:00", "2026-12-01T24:00:00Z", "2026-12-01T10:00:00+2", "1796083200000",
        "-5", "12.", "2026-12-01Tx", "2026-12-01T10:00:00Zjunk", "1e9"}) {
    auto t = ParseTimeMs(bad);
    EXPECT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseTimeMs("2026-12-01T10:00:00").status().message(),
            "'2026-12-01T10:00:00' has no UTC offset: end it with Z or +HH:MM");
  EXPECT_EQ(ParseTimeMs("soon").status().message(),
            "'soon' is not a time: use a UTC date (2026-12-01), an RFC 3339 time "
            "(2026-12-01T10:00:00Z) or unix seconds");
}

}  // namespace
}  // namespace brisk::gateway
