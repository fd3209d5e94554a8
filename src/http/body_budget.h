// The server-wide budget of request body bytes in flight (ServerOptions::max_inflight_body_bytes).
//
// A connection takes a BodyLease when a request's header section is complete and grows it as
// the body arrives (Content-Length: the whole length at once, before any body byte is read;
// chunked: the decoded body's buffer as it grows). A lease that cannot grow is refused at
// once and the request is answered 503. The lease moves into the Request handed to the
// handler; its bytes return to the budget when the last holder drops it (see
// http_server.h, Request::body_lease).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace brisk::http::internal {

// Fairness: the last eighth of the budget is kept for small bodies (a lease of at most
// kSmallBodyBytes: ordinary chat requests), so stalled large uploads cannot fill the whole
// budget and refuse everyone else's requests. A large body still fits an otherwise idle
// budget, so one largest body always gets through.
inline constexpr size_t kSmallBodyBytes = 64 << 10;

class BodyBudget {
 public:
  explicit BodyBudget(size_t limit) : limit_(limit), reserve_(limit / 8) {}  // 0: unlimited

  // Takes n bytes if they fit; false (and nothing taken) otherwise. `large`: the lease
  // grows past kSmallBodyBytes, so the small-body reserve is not for it.
  bool TryAcquire(size_t n, bool large = false);
  void Release(size_t n);

  size_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }

 private:
  const size_t limit_;
  const size_t reserve_;
  std::atomic<size_t> used_{0};
};

// A share of a BodyBudget; returns it on destruction. Thread-compatible: grown by one
// connection strand, then only destroyed (or Released) by whoever holds the Request.
class BodyLease {
 public:
  explicit BodyLease(std::shared_ptr<BodyBudget> budget) : budget_(std::move(budget)) {}
  ~BodyLease() { Release(); }
  BodyLease(const BodyLease&) = delete;
  BodyLease& operator=(const BodyLease&) = delete;

  // Grows the share to `total` bytes (never shrinks it). False if the budget is exhausted.
  bool GrowTo(size_t total);
  void Release();

  size_t bytes() const { return bytes_; }

 private:
  const std::shared_ptr<BodyBudget> budget_;
  size_t bytes_ = 0;
};

}  // namespace brisk::http::internal
