#include "cli/serving_gate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace brisk {
namespace {

ServingKey Key() {
  ServingKey k;
  k.model_hash =
      ModelFileHash(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("GGUF-bytes"), 10));
  k.precision = "q8_0";
  return k;
}

class ServingGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("brisk-gate-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const ServingKey& file_key, const nlohmann::json& body) {
    std::ofstream(dir_ / (file_key.Id() + ".json")) << body.dump();
  }
  std::filesystem::path dir_;
};

TEST_F(ServingGateTest, KeyNamesEverythingThatChangesTheNumbers) {
  const ServingKey k = Key();
  EXPECT_EQ(k.model_hash.size(), 32u);
  EXPECT_EQ(k.Id(), k.model_hash + "-q8_0-kvf16-" + std::string(kEngineVersion));
  auto back = ServingKey::FromJson(k.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, k);
  EXPECT_FALSE(ServingKey::FromJson({{"precision", "q8_0"}}).ok());
  EXPECT_NE(ModelFileHash({}), k.model_hash);
  EXPECT_FALSE(k.ToJson().contains("rope"));  // the file's own scaling: as before
}

TEST_F(ServingGateTest, AProfilesRopeScalingIsPartOfTheKey) {
  ServingKey k = Key();
  k.rope = "yarn-x2-o8192";
  EXPECT_EQ(k.Id(), k.model_hash + "-q8_0-kvf16-rope-yarn-x2-o8192-" + std::string(kEngineVersion));
  EXPECT_EQ(k.ToJson()["rope"], "yarn-x2-o8192");
  auto back = ServingKey::FromJson(k.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, k);
  EXPECT_NE(back->Id(), Key().Id());
  nlohmann::json bad = k.ToJson();
  bad["rope"] = 2;
  EXPECT_FALSE(ServingKey::FromJson(bad).ok());
}

TEST_F(ServingGateTest, OnlyAPassingReportForTheSameKeyCounts) {
  const ServingKey k = Key();
  EXPECT_EQ(FindPassingGateReport(dir_.string(), k).status().code(), StatusCode::kNotFound);
  Write(k, {{"gate_passed", false}, {"serving_key", k.ToJson()}});
  EXPECT_FALSE(FindPassingGateReport(dir_.string(), k).ok());
  // A file under this key's name that describes another key (copied or
  // renamed by hand) does not count.
  ServingKey other = k;
  other.engine_version = "0.0.1";
  Write(k, {{"gate_passed", true}, {"serving_key", other.ToJson()}});
  EXPECT_FALSE(FindPassingGateReport(dir_.string(), k).ok());
  Write(k, {{"gate_passed", true}, {"serving_key", k.ToJson()}});
  auto found = FindPassingGateReport(dir_.string(), k);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, (dir_ / (k.Id() + ".json")).string());
  // Another precision has its own key and no report.
  ServingKey q4 = k;
  q4.precision = "q4_0";
  EXPECT_FALSE(FindPassingGateReport(dir_.string(), q4).ok());
  std::ofstream(dir_ / (k.Id() + ".json")) << "{not json";
  EXPECT_FALSE(FindPassingGateReport(dir_.string(), k).ok());
}

TEST_F(ServingGateTest, ALocalRunMustBeTheKeysFileAndEngine) {
  const ServingKey k = Key();
  EXPECT_TRUE(CheckKeyDescribesLocalRun(k, k.model_hash).ok());
  // Another file (a changed byte changes the hash): its numbers say nothing
  // about the served one.
  const std::string other =
      ModelFileHash(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("GGUF-bytez"), 10));
  Status s = CheckKeyDescribesLocalRun(k, other);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(other), std::string::npos) << s.message();
  ServingKey old = k;
  old.engine_version = "0.0.1";
  s = CheckKeyDescribesLocalRun(old, k.model_hash);
  EXPECT_NE(s.message().find("0.0.1"), std::string::npos) << s.message();
}

TEST_F(ServingGateTest, DefaultDirFollowsTheEnvironment) {
  ::setenv("BRISK_GATE_DIR", "/tmp/g", 1);
  EXPECT_EQ(DefaultGateDir(), "/tmp/g");
  ::unsetenv("BRISK_GATE_DIR");
  ::setenv("XDG_CACHE_HOME", "/tmp/x", 1);
  EXPECT_EQ(DefaultGateDir(), "/tmp/x/brisk/gates");
  ::unsetenv("XDG_CACHE_HOME");
}

}  // namespace
}  // namespace brisk
