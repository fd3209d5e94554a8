#include "util/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace brisk::log {
namespace {

using std::chrono::milliseconds;
using std::chrono::system_clock;

// 2025-06-01T12:34:56.789Z
const system_clock::time_point kTime{milliseconds(int64_t{1748781296789})};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Restores the default configuration after each test.
class LogTest : public ::testing::Test {
 protected:
  void TearDown() override { Init(Level::kInfo, Format::kText); }
};

TEST(LogFormatTest, Timestamp) {
  EXPECT_EQ(Timestamp(kTime), "2025-06-01T12:34:56.789Z");
  EXPECT_EQ(Timestamp(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(Timestamp(system_clock::time_point{milliseconds(-1)}), "1969-12-31T23:59:59.999Z");
  // Sub-millisecond parts are cut, not rounded.
  EXPECT_EQ(Timestamp(kTime + std::chrono::microseconds(999)), "2025-06-01T12:34:56.789Z");
}

TEST(LogFormatTest, TextLine) {
  EXPECT_EQ(FormatLine(Format::kText, Level::kInfo, kTime, "listening on 127.0.0.1:8000"),
            "2025-06-01T12:34:56.789Z info  listening on 127.0.0.1:8000");
  EXPECT_EQ(FormatLine(Format::kText, Level::kError, kTime, "x"),
            "2025-06-01T12:34:56.789Z error x");
}

TEST(LogFormatTest, JsonLine) {
  EXPECT_EQ(FormatLine(Format::kJson, Level::kWarn, kTime, "a \"quoted\"\nline\\"),
            R"({"ts":"2025-06-01T12:34:56.789Z","level":"warn","msg":"a \"quoted\"\nline\\"})");
}

TEST(LogFormatTest, JsonLineWithInvalidUtf8IsValidJson) {
  std::string bad = "bytes \xff\xfe and a cut \xe2\x82 and \x01 control";
  std::string line = FormatLine(Format::kJson, Level::kInfo, kTime, bad);
  nlohmann::json j = nlohmann::json::parse(line);  // throws if invalid
  EXPECT_EQ(j["msg"], "bytes \xEF\xBF\xBD\xEF\xBF\xBD and a cut \xEF\xBF\xBD and \x01 control");
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(LogFormatTest, ParseNames) {
  ASSERT_EQ(LevelNames().size(), 6u);
  for (size_t i = 0; i < LevelNames().size(); ++i) {
    auto l = ParseLevel(LevelNames()[i]);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(static_cast<size_t>(*l), i);
    EXPECT_EQ(LevelName(*l), LevelNames()[i]);
  }
  EXPECT_EQ(*ParseFormat("text"), Format::kText);
  EXPECT_EQ(*ParseFormat("json"), Format::kJson);
  auto bad = ParseLevel("warning");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("trace, debug, info, warn, error, off"), std::string::npos);
  EXPECT_FALSE(ParseFormat("JSON").ok());
  EXPECT_FALSE(ParseLevel("").ok());
}

TEST_F(LogTest, LevelFilters) {
  Init(Level::kWarn, Format::kText);
  EXPECT_EQ(GetLevel(), Level::kWarn);
  EXPECT_FALSE(Enabled(Level::kInfo));
  EXPECT_TRUE(Enabled(Level::kWarn));
  EXPECT_TRUE(Enabled(Level::kError));
  EXPECT_FALSE(Enabled(Level::kOff));

  testing::internal::CaptureStderr();
  Info("hidden {}", 1);
  Warn("shown {}", 2);
  Error("shown {}", 3);
  std::vector<std::string> lines = Lines(testing::internal::GetCapturedStderr());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[0].ends_with(" warn  shown 2")) << lines[0];
  EXPECT_TRUE(lines[1].ends_with(" error shown 3")) << lines[1];

  Init(Level::kOff, Format::kText);
  testing::internal::CaptureStderr();
  Error("nothing");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");

  Init(Level::kTrace, Format::kText);
  testing::internal::CaptureStderr();
  Trace("t");
  Debug("d");
  EXPECT_EQ(Lines(testing::internal::GetCapturedStderr()).size(), 2u);
}

TEST_F(LogTest, JsonLinesFromManyThreads) {
  Init(Level::kDebug, Format::kJson);
  EXPECT_EQ(GetFormat(), Format::kJson);
  constexpr int kThreads = 4, kPerThread = 50;
  testing::internal::CaptureStderr();
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([t] {
        for (int i = 0; i < kPerThread; ++i) Debug("thread {} message {} \xff", t, i);
      });
    }
  }
  std::vector<std::string> lines = Lines(testing::internal::GetCapturedStderr());
  ASSERT_EQ(lines.size(), size_t{kThreads * kPerThread});
  for (const std::string& line : lines) {
    nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["level"], "debug");
    EXPECT_TRUE(j["msg"].get<std::string>().starts_with("thread "));
    EXPECT_EQ(j["ts"].get<std::string>().size(), 24u);
  }
}

}  // namespace
}  // namespace brisk::log
