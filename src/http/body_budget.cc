#include "http/body_budget.h"

namespace brisk::http::internal {

bool BodyBudget::TryAcquire(size_t n, bool large) {
  if (n == 0) return true;
  if (limit_ == 0) {
    used_.fetch_add(n, std::memory_order_relaxed);
    return true;
  }
  const size_t cap = large ? limit_ - reserve_ : limit_;
  size_t cur = used_.load(std::memory_order_relaxed);
  do {
    const bool fits = n <= cap && cur <= cap - n;
    const bool alone = large && cur == 0 && n <= limit_;  // one largest body, idle budget
    if (!fits && !alone) return false;
  } while (!used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  return true;
}

void BodyBudget::Release(size_t n) {
  if (n > 0) used_.fetch_sub(n, std::memory_order_relaxed);
}

bool BodyLease::GrowTo(size_t total) {
  if (total <= bytes_) return true;
  if (!budget_->TryAcquire(total - bytes_, total > kSmallBodyBytes)) return false;
  bytes_ = total;
  return true;
}

void BodyLease::Release() {
  budget_->Release(bytes_);
  bytes_ = 0;
}

}  // namespace brisk::http::internal
