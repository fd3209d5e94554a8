#include "gateway/budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gateway/utc_time.h"

namespace brisk::gateway {
namespace {

int64_t UnixMs(Budgets::Time t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// The stricter of two limits, 0 meaning none.
double Stricter(double a, double b) {
  if (a <= 0) return std::max(b, 0.0);
  if (b <= 0) return a;
  return std::min(a, b);
}

// Dollars as people read them: cents, and below $1 down to a hundredth of a
// cent ($0.30, $0.0125).
std::string Usd(double v) {
  if (std::fabs(v) >= 1) return fmt::format("${:.2f}", v);
  std::string s = fmt::format("${:.4f}", v);
  while (s.size() > s.find('.') + 3 && s.back() == '0') s.pop_back();
  return s;
}

}  // namespace

Budgets::Budgets(const std::vector<BudgetConfig>& configs) {
  for (const BudgetConfig& c : configs) {
    const bool is_feature = c.key.empty();
    Subject& s = (is_feature ? features_ : keys_)[is_feature ? c.feature : c.key];
    s.day.limit_usd = Stricter(s.day.limit_usd, c.daily_usd);
    s.month.limit_usd = Stricter(s.month.limit_usd, c.monthly_usd);
  }
}

void Budgets::Roll(Subject* s, int64_t now_ms) {
  if (now_ms >= s->day.end_ms) {
    s->day.start_ms = UtcDayStartMs(now_ms);
    s->day.end_ms = UtcNextDayStartMs(now_ms);
    s->day.spent_usd = 0;
  }
  if (now_ms >= s->month.end_ms) {
    s->month.start_ms = UtcMonthStartMs(now_ms);
    s->month.end_ms = UtcNextMonthStartMs(now_ms);
    s->month.spent_usd = 0;
  }
}

Budgets::Subject* Budgets::Find(Subjects& subjects, std::string_view name) {
  if (name.empty()) return nullptr;
  auto it = subjects.find(name);
  return it == subjects.end() ? nullptr : &it->second;
}

Status Budgets::Load(Ledger& ledger, Time now) {
  const int64_t now_ms = UnixMs(now);
  std::lock_guard lock(mu_);
  for (bool is_feature : {false, true}) {
    for (auto& [name, s] : is_feature ? features_ : keys_) {
      Roll(&s, now_ms);
      for (Window* w : {&s.day, &s.month}) {
        if (w->limit_usd <= 0) continue;
        Expected<double> spent = ledger.SpendSince(name, is_feature, w->start_ms);
        if (!spent.ok()) {
          return spent.status().WithContext(fmt::format("reading the spend of {} '{}'",
                                                        is_feature ? "feature" : "API key", name));
        }
        w->spent_usd = *spent;
      }
    }
  }
  return Status::Ok();
}

Status Budgets::Check(std::string_view key_name, std::string_view feature, double estimate_usd,
                      Time now) {
  if (!std::isfinite(estimate_usd) || estimate_usd < 0) estimate_usd = 0;
  const int64_t now_ms = UnixMs(now);
  std::lock_guard lock(mu_);
  for (bool is_feature : {false, true}) {
    const std::string_view name = is_feature ? feature : key_name;
    Subject* s = Find(is_feature ? features_ : keys_, name);
    if (!s) continue;
    Roll(s, now_ms);
    for (bool daily : {true, false}) {
      const Window& w = daily ? s->day : s->month;
      if (w.limit_usd <= 0) continue;
      const bool reached = w.spent_usd >= w.limit_usd;
      if (!reached && w.spent_usd + estimate_usd <= w.limit_usd) continue;
      const std::string what =
          fmt::format("{} '{}' {} budget {}", is_feature ? "feature" : "API key", name,
                      daily ? "daily" : "monthly", Usd(w.limit_usd));
      const std::string resets = FormatRfc3339Ms(w.end_ms);
      if (reached) {
        return ResourceExhausted("{} reached: spent {} (resets at {})", what, Usd(w.spent_usd),
                                 resets);
      }
      return ResourceExhausted(
          "{} would be exceeded: spent {}, this request is estimated at {} (resets at {})", what,
          Usd(w.spent_usd), Usd(estimate_usd), resets);
    }
  }
  return Status::Ok();
}

void Budgets::Record(std::string_view key_name, std::string_view feature, double cost_usd,
                     Time time) {
  if (!std::isfinite(cost_usd) || cost_usd <= 0) return;
  const int64_t t = UnixMs(time);
  std::lock_guard lock(mu_);
  for (Subject* s : {Find(keys_, key_name), Find(features_, feature)}) {
    if (!s) continue;
    Roll(s, t);
    // A request that arrived before the current window (it ran across
    // midnight) was charged to the previous one, as its ledger row is.
    for (Window* w : {&s->day, &s->month}) {
      if (t >= w->start_ms && t < w->end_ms) w->spent_usd += cost_usd;
    }
  }
}

void Budgets::Record(const LedgerRow& row) {
  if (row.shadow) return;
  Record(row.api_key_name, row.feature, row.cost_usd,
         Time(std::chrono::milliseconds(row.time_unix_ms)));
}

nlohmann::ordered_json Budgets::SnapshotJson(Time now, const std::vector<std::string>* only_keys) {
  const int64_t now_ms = UnixMs(now);
  auto window = [](const Window& w) -> nlohmann::ordered_json {
    if (w.limit_usd <= 0) return nullptr;
    return {{"limit_usd", w.limit_usd},
            {"spent_usd", w.spent_usd},
            {"remaining_usd", std::max(0.0, w.limit_usd - w.spent_usd)},
            {"resets_at", FormatRfc3339Ms(w.end_ms)}};
  };
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  std::lock_guard lock(mu_);
  for (bool is_feature : {false, true}) {
    if (is_feature && only_keys) continue;
    for (auto& [name, s] : is_feature ? features_ : keys_) {
      if (only_keys && std::find(only_keys->begin(), only_keys->end(), name) == only_keys->end()) {
        continue;
      }
      Roll(&s, now_ms);
      data.push_back({{"kind", is_feature ? "feature" : "key"},
                      {"name", name},
                      {"daily", window(s.day)},
                      {"monthly", window(s.month)}});
    }
  }
  return {{"object", "budgets"}, {"data", std::move(data)}};
}

}  // namespace brisk::gateway
