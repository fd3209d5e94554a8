#include "server/desired_replicas.h"

#include <algorithm>
#include <cmath>

namespace brisk {

double DesiredReplicas(double arrival_per_s, double queue_depth, double target_queue_drain_s,
                       double capacity_per_s) {
  arrival_per_s = std::max(0.0, arrival_per_s);
  queue_depth = std::max(0.0, queue_depth);
  // A zero or negative target would divide by zero: drain the backlog in 1 s.
  const double drain_s = target_queue_drain_s > 0 ? target_queue_drain_s : 1.0;
  const double needed_per_s = arrival_per_s + queue_depth / drain_s;
  if (needed_per_s <= 0) return 0;
  if (capacity_per_s <= 0) return 1;
  return needed_per_s / capacity_per_s;
}

namespace {

// How long a state has held: true once it held min_s in a row.
bool Sustained(bool in_state, double now_s, double min_s, double* since_s) {
  if (!in_state) {
    *since_s = -1;
    return false;
  }
  if (*since_s < 0) *since_s = now_s;
  return now_s - *since_s >= min_s;
}

}  // namespace

void DrainCapacity::Observe(double now_s, double finished_per_s, int64_t running, int64_t waiting) {
  if (Sustained(waiting > 0, now_s, min_sustained_s_, &saturated_since_s_)) {
    if (saturated_ <= 0) {
      saturated_ = finished_per_s;
    } else {
      // Exponential average over time: steps come at uneven intervals.
      const double w = 1 - std::exp(-(now_s - last_saturated_s_) / tau_s_);
      saturated_ += w * (finished_per_s - saturated_);
    }
    last_saturated_s_ = now_s;
  }
  if (Sustained(running > 0 || waiting > 0, now_s, min_sustained_s_, &busy_since_s_))
    busy_max_ = std::max(busy_max_, finished_per_s);
}

}  // namespace brisk
