#include "loadgen/workload.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "util/test_support.h"

namespace brisk::loadgen {
namespace {

int64_t Words(std::string_view s) {
  if (s.empty()) return 0;
  return static_cast<int64_t>(std::count(s.begin(), s.end(), ' ')) + 1;
}

bool SameItem(const WorkloadItem& a, const WorkloadItem& b) {
  if (a.prompt != b.prompt || a.max_tokens != b.max_tokens ||
      a.messages.size() != b.messages.size())
    return false;
  for (size_t i = 0; i < a.messages.size(); ++i)
    if (a.messages[i].role != b.messages[i].role || a.messages[i].content != b.messages[i].content)
      return false;
  return true;
}

WorkloadSpec RandomSpec(uint64_t seed) {
  WorkloadSpec spec;
  spec.input = {64, 0.5, LengthDist::kUniform, 0};
  spec.output = {32, 0, LengthDist::kUniform, 0};
  spec.seed = seed;
  return spec;
}

TEST(Workload, RandomIsDeterministicBySeedAndIndex) {
  auto a = Workload::Create(RandomSpec(1));
  auto b = Workload::Create(RandomSpec(1));
  auto c = Workload::Create(RandomSpec(2));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  for (int64_t i = 0; i < 20; ++i) {
    EXPECT_TRUE(SameItem(a->Item(kMeasuredStream, i), b->Item(kMeasuredStream, i)));
    EXPECT_FALSE(SameItem(a->Item(kMeasuredStream, i), c->Item(kMeasuredStream, i)));
    EXPECT_FALSE(SameItem(a->Item(kMeasuredStream, i), a->Item(kWarmupStream, i)));
  }
  EXPECT_FALSE(SameItem(a->Item(kMeasuredStream, 0), a->Item(kMeasuredStream, 1)));
}

TEST(Workload, RandomLengthsFollowTheSpec) {
  auto w = Workload::Create(RandomSpec(3));
  ASSERT_TRUE(w.ok());
  double sum = 0;
  for (int64_t i = 0; i < 2000; ++i) {
    WorkloadItem item = w->Item(kMeasuredStream, i);
    const int64_t words = Words(item.prompt);
    EXPECT_GE(words, 32);
    EXPECT_LE(words, 96);
    EXPECT_EQ(words, item.prompt_tokens_estimate);
    EXPECT_EQ(item.max_tokens, 32);
    ASSERT_EQ(item.messages.size(), 1u);
    EXPECT_EQ(item.messages[0].content, item.prompt);
    sum += static_cast<double>(words);
  }
  EXPECT_NEAR(sum / 2000, 64, 1.5);
}

TEST(SampleLength, UniformAndLogNormal) {
  Rng rng(9);
  LengthSpec fixed{100, 0, LengthDist::kUniform, 0};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(SampleLength(fixed, rng), 100);
  LengthSpec logn{100, 1.0, LengthDist::kLogNormal, 1024};
  std::vector<int64_t> v;
  for (int i = 0; i < 20001; ++i) v.push_back(SampleLength(logn, rng));
  std::sort(v.begin(), v.end());
  EXPECT_NEAR(static_cast<double>(v[v.size() / 2]), 100, 4);  // the median
  EXPECT_GE(v.front(), 1);
  EXPECT_EQ(v.back(), 1024);  // capped
  EXPECT_FALSE(ValidateLengthSpec({0, 0, LengthDist::kUniform, 0}, "input").ok());
  EXPECT_FALSE(ValidateLengthSpec({10, 1.5, LengthDist::kUniform, 0}, "input").ok());
  EXPECT_TRUE(ValidateLengthSpec({10, 1.5, LengthDist::kLogNormal, 0}, "input").ok());
}

TEST(Workload, SharedPrefixUsesFewFixedPrefixes) {
  WorkloadSpec spec = RandomSpec(5);
  spec.kind = WorkloadKind::kSharedPrefix;
  spec.prefix_len = 50;
  spec.num_prefixes = 3;
  auto w = Workload::Create(spec);
  ASSERT_TRUE(w.ok());
  std::set<std::string> prefixes;
  std::set<int64_t> ids;
  for (int64_t i = 0; i < 200; ++i) {
    WorkloadItem item = w->Item(kMeasuredStream, i);
    ASSERT_EQ(item.messages.size(), 2u);
    EXPECT_EQ(item.messages[0].role, "system");
    EXPECT_EQ(Words(item.messages[0].content), 50);
    EXPECT_TRUE(item.prompt.starts_with(item.messages[0].content + "\n\n"));
    EXPECT_EQ(item.prompt_tokens_estimate, 50 + Words(item.messages[1].content));
    prefixes.insert(item.messages[0].content);
    ids.insert(item.prefix_id);
  }
  EXPECT_EQ(prefixes.size(), 3u);
  EXPECT_EQ(ids, (std::set<int64_t>{0, 1, 2}));
}

TEST(SplitPassages, FortuneFormatAndParagraphs) {
  auto f = SplitPassages("First one.\n\t-- Someone\n%\n\n%\nSecond\nline two\n%\n");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0], "First one.\n -- Someone");
  EXPECT_EQ(f[1], "Second\nline two");
  auto p = SplitPassages("Para one\nstill one.\n\n\nPara two.\r\n  \r\nPara three");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0], "Para one\nstill one.");
  EXPECT_EQ(p[2], "Para three");
}

class ConversationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("brisk_conv_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(dir_);
    std::ofstream a(dir_ / "a");
    for (int i = 0; i < 30; ++i) a << "Passage a" << i << " has some words in it.\n%\n";
    std::ofstream b(dir_ / "b");
    for (int i = 0; i < 30; ++i) b << "Passage b" << i << ", a different one.\n%\n";
    std::ofstream(dir_ / "b.dat") << "binary index, skipped";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ConversationTest, TurnsAlternateAndEndWithUser) {
  auto corpus = LoadTextCorpus(dir_.string());
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  EXPECT_EQ(corpus->passages.size(), 60u);
  EXPECT_EQ(corpus->passages[0], "Passage a0 has some words in it.");  // files sorted by name
  WorkloadSpec spec = ConversationDefaults();
  spec.text_path = dir_.string();
  spec.seed = 11;
  auto w = Workload::Create(spec);
  ASSERT_TRUE(w.ok());
  bool multi_turn = false;
  for (int64_t i = 0; i < 100; ++i) {
    WorkloadItem item = w->Item(kMeasuredStream, i);
    ASSERT_FALSE(item.messages.empty());
    ASSERT_EQ(item.messages.size() % 2, 1u);
    for (size_t k = 0; k < item.messages.size(); ++k)
      EXPECT_EQ(item.messages[k].role, k % 2 == 0 ? "user" : "assistant");
    multi_turn |= item.messages.size() > 1;
    EXPECT_TRUE(item.prompt.starts_with("User: Passage "));
    EXPECT_TRUE(item.prompt.ends_with("\nAssistant:"));
    EXPECT_GE(item.max_tokens, 1);
    EXPECT_LE(item.max_tokens, 1024);
    EXPECT_TRUE(SameItem(item, w->Item(kMeasuredStream, i)));
  }
  EXPECT_TRUE(multi_turn);
}

TEST(Conversation, MissingTextSourceSaysWhatToInstall) {
  WorkloadSpec spec = ConversationDefaults();
  spec.text_path = "/nonexistent/fortunes";
  auto w = Workload::Create(spec);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("apt-get install fortunes"), std::string::npos);
}

TEST(Conversation, DebianFortunesPackage) {
  if (!std::filesystem::exists(kDefaultTextDir))
    BRISK_SKIP_OR_FAIL_MISSING("Debian package fortunes not installed");
  auto corpus = LoadTextCorpus(kDefaultTextDir);
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  EXPECT_GT(corpus->passages.size(), 1000u);
  EXPECT_NE(corpus->source.find("fortunes"), std::string::npos);
}

}  // namespace
}  // namespace brisk::loadgen

namespace brisk::loadgen {
namespace {

TEST(PromptsWorkload, ParsesPromptsAndMessagesAndCycles) {
  auto items = ParsePromptsJsonl(
      "{\"prompt\": \"fix this\", \"max_tokens\": 7}\n\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"},"
      " {\"role\": \"user\", \"content\": \"hi\"}]}\n");
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[0].prompt, "fix this");
  EXPECT_EQ((*items)[0].messages.size(), 1u);
  EXPECT_EQ((*items)[0].max_tokens, 7);
  EXPECT_EQ((*items)[1].prompt, "be brief\nhi");
  EXPECT_EQ((*items)[1].messages[1].role, "user");
  EXPECT_EQ((*items)[1].max_tokens, 0);  // the output length spec decides
}

TEST(PromptsWorkload, BadLinesAreNamed) {
  for (const char* bad :
       {"not json", "[1]", "{\"prompt\": 3}", "{\"messages\": []}",
        "{\"messages\": [{\"role\": \"user\"}]}", "{\"prompt\": \"x\", \"max_tokens\": 0}", ""}) {
    auto items = ParsePromptsJsonl(std::string("{\"prompt\": \"ok\"}\n") + bad);
    if (std::string(bad).empty()) {
      EXPECT_TRUE(items.ok());
      continue;
    }
    ASSERT_FALSE(items.ok()) << bad;
    EXPECT_NE(items.status().message().find("line 2"), std::string::npos)
        << items.status().message();
  }
  EXPECT_FALSE(ParsePromptsJsonl("\n\n").ok());
}

}  // namespace
}  // namespace brisk::loadgen
