#include "gateway/replica_picker.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace brisk::gateway {

namespace {

// The most an ejection is lengthened: eject_for x 1, 2, 4, 8.
constexpr int kMaxEjectMultiplier = 8;

uint64_t RingPoint(const std::string& name, int i) {
  std::string s = name + "#" + std::to_string(i);
  return XXH3_64bits(s.data(), s.size());
}

}  // namespace

ReplicaPicker::ReplicaPicker(std::vector<std::string> replica_names, PickerOptions options)
    : options_(options) {
  replicas_.reserve(replica_names.size());
  for (std::string& name : replica_names) {
    ReplicaState r;
    r.name = std::move(name);
    replicas_.push_back(std::move(r));
  }
  admitted_since_.assign(replicas_.size(), SteadyTime{});
  const int vnodes = std::max(1, options_.virtual_nodes);
  ring_.reserve(replicas_.size() * static_cast<size_t>(vnodes));
  for (int r = 0; r < static_cast<int>(replicas_.size()); ++r) {
    for (int i = 0; i < vnodes; ++i) ring_.emplace_back(RingPoint(replicas_[r].name, i), r);
  }
  std::sort(ring_.begin(), ring_.end());
}

int64_t ReplicaPicker::work(int replica) const {
  const ReplicaState& r = replicas_[replica];
  return int64_t{r.outstanding} + (r.load.known ? int64_t{std::max(0, r.load.waiting)} : 0);
}

bool ReplicaPicker::Excluded(int replica, const std::vector<int>& exclude) const {
  return std::find(exclude.begin(), exclude.end(), replica) != exclude.end();
}

bool ReplicaPicker::Candidate(int replica, const std::vector<int>& exclude, SteadyTime now,
                              bool probe_expired) const {
  const ReplicaState& r = replicas_[replica];
  if (Excluded(replica, exclude)) return false;
  if (!r.ejected) return !probe_expired;
  return probe_expired && now >= r.ejected_until;
}

std::optional<int> ReplicaPicker::Pick(uint64_t affinity_key, const std::vector<int>& exclude,
                                       SteadyTime now, const PrefixMatch* prefix) {
  const int n = static_cast<int>(replicas_.size());
  std::vector<int> candidates;
  candidates.reserve(replicas_.size());
  for (int i = 0; i < n; ++i) {
    if (Candidate(i, exclude, now, /*probe_expired=*/false)) candidates.push_back(i);
  }
  // No admitted replica left: probe one whose ejection time is up (its
  // success re-admits it) rather than fail the request outright.
  if (candidates.empty()) {
    for (int i = 0; i < n; ++i) {
      if (Candidate(i, exclude, now, /*probe_expired=*/true)) candidates.push_back(i);
    }
  }
  if (candidates.empty()) return std::nullopt;
  if (options_.policy == PickPolicy::kRoundRobin) return PickRoundRobin(candidates);
  if (prefix && prefix->prompt_blocks > 0) {
    if (auto r = PickCachedPrefix(*prefix, affinity_key, candidates)) return r;
  }
  if (options_.prefix_affinity && affinity_key != 0) {
    return PickAffinity(affinity_key, candidates);
  }
  return PickLeastLoaded(candidates);
}

std::optional<int> ReplicaPicker::PickRoundRobin(const std::vector<int>& candidates) {
  // `candidates` ascends: the first at or after the cursor, else wrap around.
  const uint64_t start = rr_cursor_ % replicas_.size();
  int chosen = candidates.front();
  for (int c : candidates) {
    if (static_cast<uint64_t>(c) >= start) {
      chosen = c;
      break;
    }
  }
  rr_cursor_ = static_cast<uint64_t>(chosen) + 1;
  return chosen;
}

std::optional<int> ReplicaPicker::PickLeastLoaded(const std::vector<int>& candidates) {
  auto fill = [&](int i) { return replicas_[i].load.known ? replicas_[i].load.kv_fill : 0.0; };
  int64_t best_work = work(candidates.front());
  double best_fill = fill(candidates.front());
  std::vector<int> tied;
  for (int c : candidates) {
    const int64_t w = work(c);
    const double f = fill(c);
    if (w < best_work || (w == best_work && f < best_fill)) {
      best_work = w;
      best_fill = f;
      tied.clear();
    }
    if (w == best_work && f == best_fill) tied.push_back(c);
  }
  return PickRoundRobin(tied);
}

std::optional<int> ReplicaPicker::PickAffinity(uint64_t affinity_key,
                                               const std::vector<int>& candidates) {
  std::vector<char> is_candidate(replicas_.size(), 0);
  int64_t total = 0;
  for (int c : candidates) {
    is_candidate[c] = 1;
    total += work(c);
  }
  // Bounded load: a replica may hold up to ceil(c x mean). The least loaded
  // candidate is at most the mean, so with c >= 1 one always qualifies.
  const double factor = std::max(1.0, options_.load_factor);
  const auto capacity = static_cast<int64_t>(
      std::ceil(factor * static_cast<double>(total) / static_cast<double>(candidates.size())));
  const uint64_t point = XXH3_64bits(&affinity_key, sizeof(affinity_key));
  auto it = std::lower_bound(ring_.begin(), ring_.end(), std::make_pair(point, 0));
  for (size_t step = 0; step < ring_.size(); ++step, ++it) {
    if (it == ring_.end()) it = ring_.begin();
    const int r = it->second;
    if (is_candidate[r] && work(r) <= capacity) return r;
  }
  return PickLeastLoaded(candidates);  // not reached: some candidate qualifies
}

std::optional<int> ReplicaPicker::PickCachedPrefix(const PrefixMatch& prefix, uint64_t affinity_key,
                                                   const std::vector<int>& candidates) {
  auto known = [&](int r) {
    const auto i = static_cast<size_t>(r);
    return i < prefix.cached_blocks.size() && (i >= prefix.known.size() || prefix.known[i]);
  };
  auto cached = [&](int r) -> int64_t {
    return known(r) ? std::clamp<int64_t>(prefix.cached_blocks[r], 0, prefix.prompt_blocks) : 0;
  };
  if (std::none_of(candidates.begin(), candidates.end(), known)) return std::nullopt;
  const int64_t block = std::max(1, prefix.block_size);
  const int64_t weight = std::max<int64_t>(0, options_.queued_request_tokens);
  int64_t best = std::numeric_limits<int64_t>::max();
  std::vector<int> tied;
  for (int c : candidates) {
    const int64_t cost = (prefix.prompt_blocks - cached(c)) * block + weight * work(c);
    if (cost < best) {
      best = cost;
      tied.clear();
    }
    if (cost == best) tied.push_back(c);
  }
  if (tied.size() == 1 || affinity_key == 0 || !options_.prefix_affinity)
    return PickRoundRobin(tied);
  // Equal cost (typically: nothing cached anywhere, equal load): the first of
  // them on the key's ring, so that a new prefix has one home.
  std::vector<char> is_tied(replicas_.size(), 0);
  for (int t : tied) is_tied[t] = 1;
  const uint64_t point = XXH3_64bits(&affinity_key, sizeof(affinity_key));
  auto it = std::lower_bound(ring_.begin(), ring_.end(), std::make_pair(point, 0));
  for (size_t step = 0; step < ring_.size(); ++step, ++it) {
    if (it == ring_.end()) it = ring_.begin();
    if (is_tied[it->second]) return it->second;
  }
  return PickRoundRobin(tied);
}

void ReplicaPicker::Started(int replica) {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) return;
  ++replicas_[replica].outstanding;
}

void ReplicaPicker::Finished(int replica, RequestOutcome outcome, SteadyTime now) {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) return;
  ReplicaState& r = replicas_[replica];
  if (r.outstanding > 0) --r.outstanding;
  switch (outcome) {
    case RequestOutcome::kOk: Succeed(replica, now); break;
    case RequestOutcome::kFailure: Fail(replica, now); break;
    case RequestOutcome::kBusy: break;
  }
}

void ReplicaPicker::ReportLoad(int replica, const ReplicaLoad& load) {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) return;
  replicas_[replica].load = load;
  replicas_[replica].load.known = true;
}

void ReplicaPicker::ReportHealth(int replica, bool ok, SteadyTime now) {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) return;
  if (ok) {
    Succeed(replica, now);
  } else {
    Fail(replica, now);
  }
}

int ReplicaPicker::healthy_count(SteadyTime now) const {
  return static_cast<int>(std::count_if(replicas_.begin(), replicas_.end(),
                                        [](const ReplicaState& r) { return !r.ejected; }));
}

void ReplicaPicker::Fail(int replica, SteadyTime now) {
  ReplicaState& r = replicas_[replica];
  if (r.ejected) {
    // A probe (or health check) after the time is up failed: out again, for
    // longer. Failures of requests sent before the ejection change nothing.
    if (now >= r.ejected_until) Eject(replica, now);
    return;
  }
  if (++r.consecutive_failures >= std::max(1, options_.eject_after_failures)) Eject(replica, now);
}

void ReplicaPicker::Succeed(int replica, SteadyTime now) {
  ReplicaState& r = replicas_[replica];
  if (r.ejected) {
    if (now >= r.ejected_until) Admit(replica, now);
    return;
  }
  r.consecutive_failures = 0;
}

void ReplicaPicker::Eject(int replica, SteadyTime now) {
  ReplicaState& r = replicas_[replica];
  // A replica that stayed admitted past the longest ejection has recovered:
  // its next ejection is short again.
  if (!r.ejected && now - admitted_since_[replica] >= kMaxEjectMultiplier * options_.eject_for) {
    r.times_ejected = 0;
  }
  ++r.times_ejected;
  const int multiplier = std::min(kMaxEjectMultiplier, 1 << std::min(r.times_ejected - 1, 3));
  r.ejected = true;
  r.consecutive_failures = 0;
  r.ejected_until = now + multiplier * options_.eject_for;
}

void ReplicaPicker::Admit(int replica, SteadyTime now) {
  ReplicaState& r = replicas_[replica];
  r.ejected = false;
  r.consecutive_failures = 0;
  admitted_since_[replica] = now;
}

}  // namespace brisk::gateway
