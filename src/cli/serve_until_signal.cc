#include "cli/serve_until_signal.h"

#include <pthread.h>

#include <cerrno>
#include <chrono>
#include <ctime>

#include "util/log.h"

namespace brisk {

sigset_t BlockShutdownSignals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return sigs;
}

int ServeUntilSignal(const sigset_t& sigs, const ServingLifecycle& l) {
  int sig = 0;
  while (sigwait(&sigs, &sig) != 0) {
  }
  log::Info("{}: {}: draining (grace {} s; signal again to stop now)", l.name,
            sig == SIGINT ? "SIGINT" : "SIGTERM", l.drain_grace_s);
  if (l.begin_drain) l.begin_drain();
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(l.drain_grace_s));
  bool second = false;
  auto in_flight = [&l] { return l.in_flight ? l.in_flight() : 0; };
  while (!second && in_flight() > 0 && Clock::now() < until) {
    const timespec poll = {0, 20'000'000};  // 20 ms: how often `idle` is asked
    second = sigtimedwait(&sigs, nullptr, &poll) > 0;
  }
  if (second) log::Warn("{}: second signal: stopping now", l.name);
  const int64_t left = in_flight();
  if (l.stop) l.stop();
  if (left > 0) log::Warn("{}: stopped with {} requests cancelled", l.name, left);
  log::Info("{}: stopped", l.name);
  return 0;
}

}  // namespace brisk
