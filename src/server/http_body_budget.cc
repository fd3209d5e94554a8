#include "server/http_body_budget.h"

namespace brisk::http::internal {

bool BodyBudget::TryAcquire(size_t n) {
  if (n == 0) return true;
  if (limit_ == 0) {
    used_.fetch_add(n, std::memory_order_relaxed);
    return true;
  }
  size_t cur = used_.load(std::memory_order_relaxed);
  do {
    if (n > limit_ || cur > limit_ - n) return false;
  } while (!used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  return true;
}

void BodyBudget::Release(size_t n) {
  if (n > 0) used_.fetch_sub(n, std::memory_order_relaxed);
}

bool BodyLease::GrowTo(size_t total) {
  if (total <= bytes_) return true;
  if (!budget_->TryAcquire(total - bytes_)) return false;
  bytes_ = total;
  return true;
}

void BodyLease::Release() {
  budget_->Release(bytes_);
  bytes_ = 0;
}

}  // namespace brisk::http::internal
