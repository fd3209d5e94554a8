// One persistent thread that runs one task at a time, posted by a single
// owner thread: Start() hands it a task, Wait() blocks until it has run.
// For work that overlaps the caller's own (the grammar token masks of a
// step, computed while the forward pass runs) without creating a thread per
// step.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace brisk {

class BackgroundTask {
 public:
  BackgroundTask() : thread_([this] { Loop(); }) {}
  ~BackgroundTask() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;

  // Runs `task` on the thread. The previous task must have been waited for.
  void Start(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      task_ = std::move(task);
      pending_ = true;
    }
    cv_.notify_all();
  }
  // Blocks until the task last started has finished (at once if none).
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !pending_; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || (pending_ && task_); });
      if (stop_) return;
      std::function<void()> task = std::move(task_);
      task_ = nullptr;
      lock.unlock();
      task();
      lock.lock();
      pending_ = false;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;
  bool pending_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: started once the state above exists
};

}  // namespace brisk
