#include "obs/access_log.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "util/log.h"

namespace brisk {
namespace {

using std::chrono::milliseconds;
using std::chrono::system_clock;
using ::testing::HasSubstr;

// 2025-06-01T12:34:56.789Z
const system_clock::time_point kTime{milliseconds(int64_t{1748781296789})};

AccessLogRecord FullRecord() {
  AccessLogRecord r;
  r.time = kTime;
  r.request_id = "chatcmpl-7";
  r.tenant = "acme";
  r.feature = "search";
  r.model = "SmolLM2-135M-Instruct.Q4_1";
  r.endpoint = "chat.completions";
  r.status = 200;
  r.outcome = AccessOutcome::kOk;
  r.stream = true;
  r.priority = "interactive";
  r.prompt_tokens = 31;
  r.cached_tokens = 16;
  r.output_tokens = 64;
  r.queue_ms = 0.412;
  r.ttft_ms = 18.5;
  r.total_ms = 301.25;
  r.finish_reason = "stop";
  r.remote_addr = "127.0.0.1:50312";
  return r;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A fresh directory for one test, removed after it.
class AccessLogFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("brisk_access_log_test_{}_{}", static_cast<long>(getpid()),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST(AccessLogFormatTest, FullRecord) {
  EXPECT_EQ(FormatAccessLogLine(FullRecord()),
            R"({"ts":"2025-06-01T12:34:56.789Z","request_id":"chatcmpl-7","tenant":"acme",)"
            R"("feature":"search","model":"SmolLM2-135M-Instruct.Q4_1",)"
            R"("endpoint":"chat.completions","status":200,"outcome":"ok","stream":true,)"
            R"("priority":"interactive","prompt_tokens":31,"cached_tokens":16,)"
            R"("output_tokens":64,"queue_ms":0.412,"ttft_ms":18.5,"total_ms":301.25,)"
            R"("finish_reason":"stop","remote_addr":"127.0.0.1:50312","trace_id":"","stages":{}})");
}

TEST(AccessLogFormatTest, DefaultsAndUnknownTimes) {
  AccessLogRecord r;
  r.time = kTime;
  r.endpoint = "completions";
  r.status = 429;
  r.outcome = AccessOutcome::kRejected;
  r.priority = "batch";
  r.ttft_ms = std::nan("");
  r.total_ms = -0.5;
  EXPECT_EQ(FormatAccessLogLine(r),
            R"({"ts":"2025-06-01T12:34:56.789Z","request_id":"","tenant":"","feature":"",)"
            R"("model":"","endpoint":"completions","status":429,"outcome":"rejected",)"
            R"("stream":false,"priority":"batch","prompt_tokens":0,"cached_tokens":0,)"
            R"("output_tokens":0,"queue_ms":-1,"ttft_ms":-1,"total_ms":-1,)"
            R"("finish_reason":"","remote_addr":"","trace_id":"","stages":{}})");
}

TEST(AccessLogFormatTest, MillisecondsKeepThreeDecimals) {
  AccessLogRecord r = FullRecord();
  r.queue_ms = 1.23456;
  r.ttft_ms = 0;
  r.total_ms = 12345.0004;
  nlohmann::json j = nlohmann::json::parse(FormatAccessLogLine(r));
  EXPECT_EQ(j["queue_ms"].get<double>(), 1.235);
  EXPECT_EQ(j["ttft_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["total_ms"].get<double>(), 12345.0);
}

TEST(AccessLogFormatTest, Names) {
  EXPECT_EQ(AccessOutcomeName(AccessOutcome::kOk), "ok");
  EXPECT_EQ(AccessOutcomeName(AccessOutcome::kCancelled), "cancelled");
  EXPECT_EQ(AccessOutcomeName(AccessOutcome::kRejected), "rejected");
  EXPECT_EQ(AccessOutcomeName(AccessOutcome::kTimeout), "timeout");
  EXPECT_EQ(AccessOutcomeName(AccessOutcome::kError), "error");
  EXPECT_EQ(AccessOutcomeName(AccessOutcome::kInvalid), "invalid");
}

TEST(AccessLogFormatTest, EscapesWhatNeedsEscaping) {
  AccessLogRecord r = FullRecord();
  r.model = "a \"quoted\" \\ model\nwith\ttabs\x01 and </script>";
  r.tenant = "tenant\r\n{\"injected\": true}";
  std::string line = FormatAccessLogLine(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_THAT(line,
              HasSubstr(R"("model":"a \"quoted\" \\ model\nwith\ttabs\u0001 and </script>")"));
  nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["model"], r.model);
  EXPECT_EQ(j["tenant"], r.tenant);
  EXPECT_EQ(j.size(), 20u);
}

TEST(AccessLogFormatTest, StagesAndTraceIdComeLast) {
  AccessLogRecord r = FullRecord();
  r.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  r.stages = {{"tokenize", 0.4104}, {"queue", 0.02}, {"prefill", 12.3}, {"write", -1}};
  std::string line = FormatAccessLogLine(r);
  EXPECT_THAT(line, HasSubstr(R"("trace_id":"4bf92f3577b34da6a3ce929d0e0e4736",)"
                              R"("stages":{"tokenize":0.41,"queue":0.02,"prefill":12.3,)"
                              R"("write":-1}})"));
}

TEST(AccessLogFormatTest, InvalidUtf8BecomesReplacementCharacter) {
  AccessLogRecord r = FullRecord();
  r.model = "m\xff\xfe";
  r.request_id = "cut \xe2\x82";  // a truncated euro sign
  r.remote_addr = std::string("nul\0byte", 8);
  r.finish_reason = "\xc0\xaf";  // overlong '/'
  std::string line;
  ASSERT_NO_THROW(line = FormatAccessLogLine(r));
  nlohmann::json j = nlohmann::json::parse(line);  // valid JSON, valid UTF-8
  EXPECT_EQ(j["model"], "m\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(j["request_id"], "cut \xEF\xBF\xBD");
  EXPECT_EQ(j["remote_addr"], std::string("nul\0byte", 8));
  EXPECT_THAT(j["finish_reason"].get<std::string>(), HasSubstr("\xEF\xBF\xBD"));
}

TEST(AccessLogFormatTest, LongFieldsAreCut) {
  AccessLogRecord r = FullRecord();
  r.model = std::string(100000, 'x');
  std::string euros;
  for (int i = 0; i < 100; ++i) euros += "\xe2\x82\xac";  // 300 bytes
  r.tenant = euros;
  nlohmann::json j = nlohmann::json::parse(FormatAccessLogLine(r));
  EXPECT_EQ(j["model"].get<std::string>(), std::string(kMaxAccessLogField, 'x'));
  // Cut at a character boundary: 85 whole euro signs, no replacement char.
  EXPECT_EQ(j["tenant"].get<std::string>(), euros.substr(0, 255));
}

TEST_F(AccessLogFileTest, WritesOneLinePerRecordFromManyThreads) {
  const auto path = dir_ / "access.jsonl";
  auto log = AccessLog::Open(path.string());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_TRUE((*log)->enabled());
  EXPECT_EQ((*log)->destination(), path.string());
  constexpr int kThreads = 4, kPerThread = 100;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          AccessLogRecord r = FullRecord();
          r.time = {};  // stamped by Write
          r.request_id = fmt::format("req-{}-{}", t, i);
          (*log)->Write(std::move(r));
        }
      });
    }
  }
  ASSERT_TRUE((*log)->Flush());
  EXPECT_EQ((*log)->lines_written(), kThreads * kPerThread);
  EXPECT_EQ((*log)->lines_dropped(), 0);
  std::vector<std::string> lines = Lines(ReadFile(path));
  ASSERT_EQ(lines.size(), size_t{kThreads * kPerThread});
  std::vector<int> next(kThreads, 0);  // per thread, lines keep the Write order
  const std::string this_year = brisk::log::Timestamp(system_clock::now()).substr(0, 4);
  for (const std::string& line : lines) {
    nlohmann::json j = nlohmann::json::parse(line);
    int t = 0, i = 0;
    ASSERT_EQ(std::sscanf(j["request_id"].get<std::string>().c_str(), "req-%d-%d", &t, &i), 2);
    EXPECT_EQ(i, next[t]++);
    EXPECT_EQ(j["ts"].get<std::string>().substr(0, 4), this_year);
  }
  log->reset();

  // Opening the same file again appends.
  auto again = AccessLog::Open(path.string());
  ASSERT_TRUE(again.ok());
  (*again)->Write(FullRecord());
  again->reset();  // the destructor writes what is queued
  lines = Lines(ReadFile(path));
  ASSERT_EQ(lines.size(), size_t{kThreads * kPerThread + 1});
  EXPECT_EQ(lines.back(), FormatAccessLogLine(FullRecord()));
}

TEST_F(AccessLogFileTest, CreateFromConfig) {
  auto log = AccessLog::Create(true, (dir_ / "from_config.jsonl").string());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_TRUE((*log)->enabled());
  (*log)->Write(FullRecord());
  log->reset();
  EXPECT_EQ(ReadFile(dir_ / "from_config.jsonl"), FormatAccessLogLine(FullRecord()) + "\n");
}

TEST_F(AccessLogFileTest, DisabledWritesNothing) {
  auto log = AccessLog::Create(false, (dir_ / "never.jsonl").string());
  ASSERT_TRUE(log.ok());
  EXPECT_FALSE((*log)->enabled());
  EXPECT_EQ((*log)->destination(), "disabled");
  testing::internal::CaptureStdout();
  (*log)->Write(FullRecord());
  EXPECT_TRUE((*log)->Flush());
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ((*log)->lines_written(), 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "never.jsonl"));

  std::unique_ptr<AccessLog> off = AccessLog::Disabled();
  off->Write(FullRecord());
  EXPECT_FALSE(off->enabled());
}

TEST_F(AccessLogFileTest, OpenErrorsNameThePath) {
  const std::string missing = (dir_ / "no" / "such" / "dir.jsonl").string();
  auto log = AccessLog::Open(missing);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(log.status().message(), HasSubstr("cannot open access log '" + missing + "'"));
  EXPECT_THAT(log.status().message(), HasSubstr("No such file or directory"));

  auto dir = AccessLog::Open(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr("Is a directory"));
  EXPECT_FALSE(AccessLog::Open("").ok());
}

TEST(AccessLogTest, StdoutAndStderr) {
  for (const char* path : {"-", "stdout"}) {
    auto log = AccessLog::Open(path);
    ASSERT_TRUE(log.ok());
    EXPECT_EQ((*log)->destination(), "stdout");
    testing::internal::CaptureStdout();
    (*log)->Write(FullRecord());
    ASSERT_TRUE((*log)->Flush());
    EXPECT_EQ(testing::internal::GetCapturedStdout(), FormatAccessLogLine(FullRecord()) + "\n");
  }
  auto log = AccessLog::Open("stderr");
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->destination(), "stderr");
  testing::internal::CaptureStderr();
  (*log)->Write(FullRecord());
  ASSERT_TRUE((*log)->Flush());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), FormatAccessLogLine(FullRecord()) + "\n");
}

// A destination nobody reads (a full pipe) never blocks Write(): lines beyond
// the queue are dropped and counted, and the destructor gives up in bounded
// time.
TEST(AccessLogTest, StuckDestinationDropsInsteadOfBlocking) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  fcntl(fds[1], F_SETPIPE_SZ, 4096);
  auto log = AccessLog::Open(fmt::format("/proc/self/fd/{}", fds[1]), 8);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  constexpr int kRecords = 1000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRecords; ++i) (*log)->Write(FullRecord());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_FALSE((*log)->Flush(milliseconds(300)));
  EXPECT_GT((*log)->lines_dropped(), 0);

  // Reading the pipe unblocks the writer: every record is written or dropped.
  std::string got;
  std::jthread reader([&] {
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) got.append(buf, n);
  });
  ASSERT_TRUE((*log)->Flush());
  EXPECT_EQ((*log)->lines_written() + (*log)->lines_dropped(), kRecords);
  const int64_t written = (*log)->lines_written();
  log->reset();
  close(fds[1]);
  reader.join();
  std::vector<std::string> lines = Lines(got);
  EXPECT_EQ(static_cast<int64_t>(lines.size()), written);
  for (const std::string& line : lines) EXPECT_EQ(line, FormatAccessLogLine(FullRecord()));
  close(fds[0]);

  // Nobody ever reads: the destructor returns after its grace.
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  fcntl(fds[1], F_SETPIPE_SZ, 4096);
  auto stuck = AccessLog::Open(fmt::format("/proc/self/fd/{}", fds[1]), 8);
  ASSERT_TRUE(stuck.ok());
  for (int i = 0; i < 100; ++i) (*stuck)->Write(FullRecord());
  const auto before = std::chrono::steady_clock::now();
  stuck->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(4));
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace brisk
