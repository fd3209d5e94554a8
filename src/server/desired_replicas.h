// How many replicas of an engine pool this process's load needs, from what
// the engine measures: exported as brisk:desired_replicas for an autoscaler
// (KEDA sums it over a pool's pods; docs/metrics.md).
//
// One process does not know its peers, so it states its own share: the
// replica-equivalents its load needs, a fraction, not a rounded count (a
// per-pod ceil summed over the pool would never scale a lightly loaded pool
// down). Over a pool, ceil(sum) is the replica count.
#pragma once

#include <cstdint>

namespace brisk {

// desired = (arrival_per_s + queue_depth / target_queue_drain_s) / capacity_per_s
//
// arrival_per_s: requests arriving per second (in steady state the measured
//   completion rate; a backlog shows up in queue_depth instead).
// queue_depth: requests admitted and waiting; they should be gone within
//   target_queue_drain_s, which adds that much rate.
// capacity_per_s: the completion rate one replica reaches when saturated
//   (DrainCapacity::capacity_per_s). Unknown (<= 0): 1 when there is any
//   load (no evidence for more replicas than this one), else 0.
// Never negative; a zero load asks for 0 (KEDA's minReplicaCount holds the floor).
double DesiredReplicas(double arrival_per_s, double queue_depth, double target_queue_drain_s,
                       double capacity_per_s);

// One replica's capacity, from its measured completion rate. While saturated
// (requests still waiting after a step: no room in concurrency, KV blocks or
// the token budget) the completion rate is the capacity for the current
// workload; it is averaged over time (time constant tau_s), not maxed, since
// the max of a noisy rate is biased high and would make a saturated replica
// ask for less than itself. Until saturation was seen, the highest rate seen
// while busy (anything running) stands in: a lower bound that makes
// DesiredReplicas err high, never low. A state counts only after lasting
// min_sustained_s in a row: that filters the first seconds of a burst, when
// the rate's window still holds idle time or a whole batch finishing at once.
// Not thread-safe: feed it from one thread (the engine's step observer).
class DrainCapacity {
 public:
  explicit DrainCapacity(double min_sustained_s = 10, double tau_s = 60)
      : min_sustained_s_(min_sustained_s), tau_s_(tau_s) {}

  // now_s: a monotonic clock; finished_per_s: the engine's completion rate
  // over its recent window; running, waiting: sequences after the step.
  void Observe(double now_s, double finished_per_s, int64_t running, int64_t waiting);
  // Requests per second one replica drains at most; 0 while unknown.
  double capacity_per_s() const { return saturated_ > 0 ? saturated_ : busy_max_; }

 private:
  double min_sustained_s_, tau_s_;
  double saturated_since_s_ = -1, busy_since_s_ = -1;  // < 0: not in that state now
  double saturated_ = 0, last_saturated_s_ = 0;        // time-weighted mean
  double busy_max_ = 0;
};

}  // namespace brisk
