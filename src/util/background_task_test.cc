#include "util/background_task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace brisk {
namespace {

TEST(BackgroundTaskTest, RunsEachTaskOnItsThreadAndWaitReturnsAfterIt) {
  BackgroundTask bg;
  const std::thread::id caller = std::this_thread::get_id();
  int runs = 0;
  for (int i = 0; i < 100; ++i) {
    std::thread::id where;
    bg.Start([&] {
      where = std::this_thread::get_id();
      ++runs;
    });
    bg.Wait();
    EXPECT_NE(where, caller);
    EXPECT_EQ(runs, i + 1);  // written by the task, read after Wait: no race
  }
}

TEST(BackgroundTaskTest, WaitWithoutATaskReturnsAndDestructionJoins) {
  std::atomic<int> n{0};
  {
    BackgroundTask bg;
    bg.Wait();
    bg.Start([&] { n.fetch_add(1); });
    bg.Wait();
    bg.Start([&] { n.fetch_add(1); });
  }  // the destructor stops the thread; the second task may or may not have run
  EXPECT_GE(n.load(), 1);
}

}  // namespace
}  // namespace brisk
