#include "gateway/calibrate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

namespace brisk::gateway {
namespace {

int Below(const std::vector<double>& v, double t) {
  int n = 0;
  for (double x : v) n += x < t;
  return n;
}

TEST(Calibrate, ThresholdEscalatesTheTargetShare) {
  std::vector<double> means = {-0.1, -2.0, -0.5, -1.0, -0.3, -0.05, -1.5, -0.8, -0.2, -3.0};
  for (double share : {0.0, 0.1, 0.3, 0.5, 0.75, 1.0}) {
    double t = ThresholdForShare(means, share);
    EXPECT_EQ(Below(means, t), static_cast<int>(std::ceil(share * 10))) << share;
    EXPECT_LT(t, 0.0);  // 0 means "off" in gateway.yaml
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Below({-1, -2}, ThresholdForShare({-1, nan, -2}, 0.5)), 1);
  EXPECT_EQ(ThresholdForShare({}, 0.5), 0.0);
}

TEST(Calibrate, ReadsGoldenSetsAndRejectsBadLines) {
  auto dir = std::filesystem::temp_directory_path() / "brisk_calibrate_test";
  std::filesystem::create_directories(dir);
  auto path = (dir / "set.jsonl").string();
  std::ofstream(path) << R"({"id": "a", "messages": [{"role": "user", "content": "hi"}]})"
                      << "\n\n"
                      << R"({"prompt": "Once", "max_tokens": 5})"
                      << "\n";
  auto cases = ReadCalibrationSet(path, "m");
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  ASSERT_EQ(cases->size(), 2u);
  EXPECT_TRUE((*cases)[0].chat);
  EXPECT_NE((*cases)[0].body.find(R"("logprobs":true)"), std::string::npos);
  EXPECT_FALSE((*cases)[1].chat);
  EXPECT_NE((*cases)[1].body.find(R"("max_tokens":5)"), std::string::npos);
  std::ofstream(path) << "{\"messages\": []}\n{\"nope\": 1}\n";
  auto bad = ReadCalibrationSet(path, "m");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":2:"), std::string::npos) << bad.status().message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace brisk::gateway
