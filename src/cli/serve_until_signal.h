// How every long-running command ends (`brisk serve`, `brisk gateway`,
// `brisk canned-upstream`), the same for all three:
//
//   1. SIGINT or SIGTERM starts a drain: the server stops taking new work
//      (/ready answers 503 "draining", new requests get 503) and the requests
//      in flight run on, for up to the drain grace.
//   2. The drain ends when nothing is in flight, when the grace is over, or at
//      a second SIGINT/SIGTERM, whichever comes first.
//   3. Then the server stops: what is still in flight is cancelled (streams
//      get an error event; the gateway's ledger rows for them are committed),
//      and the process exits with status 0.
//
// A second signal therefore shortens the drain, never skips the clean stop:
// nothing that was answered is lost from the ledger or the access log. SIGKILL
// is the way to stop without it.
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>

namespace brisk {

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts
// later (call it first, before any thread exists), and ignores SIGPIPE (a
// client that goes away is a closed connection, not the end of the process).
sigset_t BlockShutdownSignals();

struct ServingLifecycle {
  std::function<void()> begin_drain;   // stop taking new work (null: nothing to do)
  std::function<int64_t()> in_flight;  // requests being served (null: none)
  std::function<void()> stop;          // cancel what is left and stop
  double drain_grace_s = 30;
  const char* name = "server";  // for the log lines
};

// Waits for a shutdown signal in `sigs` (from BlockShutdownSignals), then
// drains and stops as described above. Returns the exit status (0).
int ServeUntilSignal(const sigset_t& sigs, const ServingLifecycle& lifecycle);

}  // namespace brisk
