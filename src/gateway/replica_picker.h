// Which replica of a tier gets a request. Pure logic over plain state: no
// threads, no I/O, no clock of its own (callers pass `now`), so it is tested
// without sockets.
//
// Policy (`least_loaded`, the default), in order:
//  1. Only healthy replicas: not ejected. A replica is ejected after
//     `eject_after_failures` consecutive failures (connect refused, reset
//     before the response head, 5xx, failed health check) and stays out for
//     `eject_for` (doubling per repeated ejection, up to 8x; the doubling
//     starts over once a replica stayed admitted for 8 x eject_for); after
//     that a passing health check (ReportHealth(ok=true)) or a successful
//     request re-admits it. An ejected replica whose time is up is picked
//     only as a last resort (no admitted candidate left), as a probe: its
//     success re-admits it, its failure ejects it again for twice as long.
//     Failures reported while the time still runs (requests that were in
//     flight at ejection) change nothing.
//  2. Prefix affinity: when the request carries an affinity key (a hash of its
//     first prompt blocks), consistent hashing over a ring of `virtual_nodes`
//     points per replica (XXH3-64 of "name#i"; the key is mixed by XXH3 too,
//     so small integers spread) picks the key's home replica, with bounded
//     load (Mirrokni et al.): a replica whose outstanding work exceeds
//     ceil(load_factor x mean outstanding work) is skipped for the next one
//     on the ring (the mean over the candidates: not ejected, not excluded;
//     the least loaded is never above it, so some replica always qualifies).
//     Shared system prompts therefore land on the replica whose prefix cache
//     holds them, unless that replica is overloaded. Adding a replica moves
//     only the keys that now hash to it (about 1/N).
//     With precise prefix routing (the tier's engines publish KV events, and
//     the request's prompt blocks were looked up in the tier's KvBlockIndex:
//     PrefixMatch), the replicas' actual cached prefixes decide instead:
//     each candidate's cost is the prompt tokens it would have to compute
//     ((prompt blocks - cached blocks) x block size) plus
//     `queued_request_tokens` per unit of outstanding work, and the
//     cheapest wins; equal costs (nothing cached, equal load) go to the
//     first of them on the affinity key's ring, so a new prefix has one
//     home. When no candidate's events are live, affinity decides as above.
//     Unlike affinity's fixed homes, a prefix evicted everywhere is placed
//     again by load, so groups spread by where there is room.
//  3. Otherwise the least outstanding work: requests this gateway has in
//     flight there, plus the replica's own last reported queue (waiting
//     sequences), with its KV fill as the tie-breaker; remaining ties go
//     round-robin.
// `round_robin` ignores load and affinity (the benchmark's baseline).
// `exclude` lists replicas already tried for this request (retries go
// elsewhere).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace brisk::gateway {

using SteadyTime = std::chrono::steady_clock::time_point;

enum class PickPolicy { kLeastLoaded, kRoundRobin };

// How a request to a replica ended, for health accounting.
enum class RequestOutcome {
  kOk,       // answered: any status < 500 other than 429
  kFailure,  // transport error (connect, reset, timeout) or a 5xx
  kBusy,     // 429: the replica is up but full; neither a failure nor a success
};

struct PickerOptions {
  PickPolicy policy = PickPolicy::kLeastLoaded;
  bool prefix_affinity = true;
  double load_factor = 1.25;  // bounded-load factor c >= 1
  int virtual_nodes = 64;
  int eject_after_failures = 3;
  std::chrono::milliseconds eject_for{5000};
  // Precise prefix routing: what one unit of outstanding work (a request in
  // flight or queued) weighs against prompt tokens to compute.
  int64_t queued_request_tokens = 256;
};

// A request's prompt against a tier's KV block index (precise prefix routing).
struct PrefixMatch {
  int32_t prompt_blocks = 0;           // full blocks of the prompt
  int block_size = 16;                 // tokens a block
  std::vector<int32_t> cached_blocks;  // per replica: its cached run of the prompt's blocks
  std::vector<char> known;             // per replica: its KV events are live (else 0 cached)
};

// What an engine last said about itself (brisk serve's GET /load).
struct ReplicaLoad {
  int32_t waiting = 0;  // queued sequences (all priorities)
  int32_t running = 0;  // running sequences
  double kv_fill = 0;   // used KV blocks / total, 0..1
  bool known = false;   // false until the first report
};

struct ReplicaState {
  std::string name;         // "host:port" (what the ledger calls the upstream)
  int32_t outstanding = 0;  // this gateway's requests in flight there
  ReplicaLoad load;
  bool ejected = false;
  int32_t consecutive_failures = 0;
  int32_t times_ejected = 0;
  SteadyTime ejected_until{};
};

class ReplicaPicker {
 public:
  ReplicaPicker(std::vector<std::string> replica_names, PickerOptions options);

  // Index of the chosen replica, or nullopt when every replica is excluded or
  // ejected with time still to run (one whose time is up is probed only when
  // no admitted replica is left). `affinity_key` 0 means none. Does not count
  // the request: call Started() when it is sent.
  // `prefix` (optional): the replicas' cached prefixes of this prompt.
  std::optional<int> Pick(uint64_t affinity_key, const std::vector<int>& exclude, SteadyTime now,
                          const PrefixMatch* prefix = nullptr);

  void Started(int replica);
  // A request ended (each Started() gets exactly one Finished()). See
  // RequestOutcome: a 429 is kBusy, neither a failure nor a success.
  void Finished(int replica, RequestOutcome outcome, SteadyTime now);
  // Shorthand: failure ? kFailure : kOk (a 429 should use kBusy instead).
  void Finished(int replica, bool failure, SteadyTime now) {
    Finished(replica, failure ? RequestOutcome::kFailure : RequestOutcome::kOk, now);
  }
  void ReportLoad(int replica, const ReplicaLoad& load);
  // A health check's result: a failure counts like a failed request; a pass
  // resets the consecutive failures and re-admits a replica whose ejection
  // time is up.
  void ReportHealth(int replica, bool ok, SteadyTime now);

  const std::vector<ReplicaState>& replicas() const { return replicas_; }
  // Replicas not ejected.
  int healthy_count(SteadyTime now) const;
  // Outstanding work as the policy sees it: in flight from this gateway plus
  // the replica's last reported queue.
  int64_t work(int replica) const;

 private:
  bool Excluded(int replica, const std::vector<int>& exclude) const;
  // Admitted, or (probe_expired) ejected with its time up.
  bool Candidate(int replica, const std::vector<int>& exclude, SteadyTime now,
                 bool probe_expired) const;
  std::optional<int> PickRoundRobin(const std::vector<int>& candidates);
  std::optional<int> PickLeastLoaded(const std::vector<int>& candidates);
  std::optional<int> PickAffinity(uint64_t affinity_key, const std::vector<int>& candidates);
  // nullopt: no candidate's KV events are live.
  std::optional<int> PickCachedPrefix(const PrefixMatch& prefix, uint64_t affinity_key,
                                      const std::vector<int>& candidates);
  void Fail(int replica, SteadyTime now);
  void Succeed(int replica, SteadyTime now);
  void Eject(int replica, SteadyTime now);
  void Admit(int replica, SteadyTime now);

  std::vector<ReplicaState> replicas_;
  std::vector<SteadyTime> admitted_since_;  // per replica: when it was last (re-)admitted
  PickerOptions options_;
  std::vector<std::pair<uint64_t, int>> ring_;  // (point, replica), sorted
  uint64_t rr_cursor_ = 0;
};

}  // namespace brisk::gateway
