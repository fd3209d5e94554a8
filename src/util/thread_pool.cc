#include "util/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace brisk {
namespace {
inline void CpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}
// Spin this many iterations before sleeping on the futex. Regions in a
// forward pass come microseconds apart; idle gaps between requests are long.
constexpr int kSpinIterations = 1 << 16;
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::Run(TaskRef task) {
  if (n_threads_ == 1) {
    task(0, 1);
    return;
  }
  task_ = &task;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  // A futex wake costs a syscall; only pay it when a worker went to sleep.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  task(0, n_threads_);
  // Spin, then yield: on an oversubscribed machine the worker we wait for
  // may not be running, and pure spinning would burn its time slice.
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < 4096) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
  task_ = nullptr;
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g;
    int spins = 0;
    while ((g = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinIterations) {
        if (spins < 4096) {
          CpuRelax();
        } else {
          std::this_thread::yield();
        }
      } else {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        generation_.wait(seen, std::memory_order_seq_cst);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        spins = 0;
      }
    }
    seen = g;
    if (stop_.load()) return;
    (*task_)(index, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace brisk
