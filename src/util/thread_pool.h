// Fork-join thread pool for the forward pass. One Run() is one parallel
// region: every thread (the caller is thread 0) runs the same function with
// its index; Run() returns when all have finished. Workers spin briefly
// between regions (a forward pass issues hundreds of them) and then sleep.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace brisk {

// Non-owning reference to a callable `void(int thread, int n_threads)`.
class TaskRef {
 public:
  template <typename F>
  TaskRef(F& f)  // NOLINT: implicit by design
      : obj_(&f), call_([](void* o, int t, int n) { (*static_cast<F*>(o))(t, n); }) {}
  void operator()(int t, int n) const { call_(obj_, t, n); }

 private:
  void* obj_;
  void (*call_)(void*, int, int);
};

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs task(t, size()) for t in [0, size()) and waits for all.
  void Run(TaskRef task);

  // Splits [0, n) into contiguous ranges, one per thread, aligned to `grain`.
  template <typename F>
  void ParallelFor(int64_t n, int64_t grain, F&& fn) {
    auto body = [&](int t, int nt) {
      int64_t chunks = (n + grain - 1) / grain;
      int64_t c0 = chunks * t / nt, c1 = chunks * (t + 1) / nt;
      int64_t b = c0 * grain, e = c1 * grain < n ? c1 * grain : n;
      if (b < e) fn(b, e);
    };
    if (n_threads_ == 1 || n <= grain) {
      if (n > 0) fn(int64_t{0}, n);
      return;
    }
    Run(body);
  }

 private:
  void WorkerLoop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  const TaskRef* task_ = nullptr;
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace brisk
