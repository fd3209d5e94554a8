#include "gateway/budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "gateway/utc_time.h"
#include "http/responses_items.h"
#include "util/log.h"

namespace brisk::gateway {
namespace {

constexpr size_t kMaxPendingSettlements = 100'000;
constexpr int64_t kSweepReservationsEveryMs = 60'000;

// One statement each (libpq runs one per call); the same text on SQLite and PostgreSQL.
constexpr const char* kCreateBudgetWindows = R"sql(
CREATE TABLE IF NOT EXISTS brisk_budget_windows (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  period TEXT NOT NULL,
  window_start_ms BIGINT NOT NULL,
  spent_usd DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (kind, name, period, window_start_ms)
))sql";
constexpr const char* kCreateBudgetReservations = R"sql(
CREATE TABLE IF NOT EXISTS brisk_budget_reservations (
  id TEXT NOT NULL,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  period TEXT NOT NULL,
  window_start_ms BIGINT NOT NULL,
  usd DOUBLE PRECISION NOT NULL,
  expires_ms BIGINT NOT NULL,
  PRIMARY KEY (id, kind, period)
))sql";
constexpr const char* kCreateReservationsIndex =
    "CREATE INDEX IF NOT EXISTS brisk_budget_reservations_window ON brisk_budget_reservations "
    "(kind, name, period, window_start_ms)";
constexpr const char* kBudgetSchemaLock = "SELECT pg_advisory_lock(7161726976)";
constexpr const char* kBudgetSchemaUnlock = "SELECT pg_advisory_unlock(7161726976)";

// A window's row, its spend so far read from the ledger, unless it exists.
// `column` is api_key_name or feature.
std::string SeedWindowSql(const char* column) {
  return fmt::format(R"sql(
INSERT INTO brisk_budget_windows (kind, name, period, window_start_ms, spent_usd)
SELECT CAST($1 AS TEXT), CAST($2 AS TEXT), CAST($3 AS TEXT), CAST($4 AS BIGINT),
       COALESCE(SUM(cost_usd), 0)
FROM brisk_ledger WHERE {} = $2 AND time_unix_ms >= $4 AND NOT shadow
ON CONFLICT (kind, name, period, window_start_ms) DO NOTHING)sql",
                     column);
}

// The window's row, locked (FOR UPDATE on PostgreSQL) by the first statement; the
// reservations read by a second one. Under READ COMMITTED each statement sees what
// was committed when it began, so the sum read after the lock is granted includes
// every reservation of the transactions that held it before (one statement would
// read them as of before its wait).
constexpr const char* kWindowSpent = R"sql(
SELECT spent_usd FROM brisk_budget_windows
WHERE kind = $1 AND name = $2 AND period = $3 AND window_start_ms = $4)sql";
constexpr const char* kWindowReserved = R"sql(
SELECT COALESCE(SUM(usd), 0) FROM brisk_budget_reservations
WHERE kind = $1 AND name = $2 AND period = $3 AND window_start_ms = $4 AND expires_ms > $5)sql";

constexpr const char* kInsertReservation = R"sql(
INSERT INTO brisk_budget_reservations (id, kind, name, period, window_start_ms, usd, expires_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7))sql";
constexpr const char* kDropReservation =
    "DELETE FROM brisk_budget_reservations WHERE id = $1 AND kind = $2 AND period = $3";
constexpr const char* kAddSpend = R"sql(
UPDATE brisk_budget_windows SET spent_usd = spent_usd + $5
WHERE kind = $1 AND name = $2 AND period = $3 AND window_start_ms = $4)sql";
constexpr const char* kSweepReservations =
    "DELETE FROM brisk_budget_reservations WHERE expires_ms <= $1";

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

struct WindowKey {
  const char* period;  // "day" | "month"
  int64_t start_ms, end_ms;
  double limit_usd;
};

std::vector<WindowKey> WindowsAt(double daily, double monthly, int64_t t_ms) {
  std::vector<WindowKey> w;
  if (daily > 0) w.push_back({"day", UtcDayStartMs(t_ms), UtcNextDayStartMs(t_ms), daily});
  if (monthly > 0) {
    w.push_back({"month", UtcMonthStartMs(t_ms), UtcNextMonthStartMs(t_ms), monthly});
  }
  return w;
}

const char* KindName(bool is_feature) { return is_feature ? "feature" : "key"; }

// spent and reserved of one window, its row created (from the ledger) if missing.
Expected<std::pair<double, double>> WindowState(SqlTx& tx, bool is_feature, const std::string& name,
                                                const WindowKey& w, int64_t now_ms, bool lock) {
  const char* kind = KindName(is_feature);
  RETURN_IF_ERROR(tx.Run(SeedWindowSql(is_feature ? "feature" : "api_key_name"),
                         {kind, name, w.period, w.start_ms})
                      .status());
  ASSIGN_OR_RETURN(SqlRows spent, tx.Run(std::string(kWindowSpent) + (lock ? tx.ForUpdate() : ""),
                                         {kind, name, w.period, w.start_ms}));
  if (spent.rows.empty()) {
    return Internal("budget window {} '{}' {} vanished", kind, name, w.period);
  }
  ASSIGN_OR_RETURN(SqlRows reserved,
                   tx.Run(kWindowReserved, {kind, name, w.period, w.start_ms, now_ms}));
  return std::pair<double, double>{SqlDouble(spent.rows[0][0]), SqlDouble(reserved.rows[0][0])};
}

}  // namespace

Expected<std::unique_ptr<Budgets>> Budgets::Open(const std::vector<BudgetConfig>& configs,
                                                 std::unique_ptr<SqlDb> db, Options options) {
  const bool pg = db->postgres();
  if (pg) RETURN_IF_ERROR(db->Run(kBudgetSchemaLock).status());
  Status st = Status::Ok();
  for (const char* sql :
       {kCreateBudgetWindows, kCreateBudgetReservations, kCreateReservationsIndex}) {
    if (st.ok()) st = db->Run(sql).status();
  }
  if (pg) (void)db->Run(kBudgetSchemaUnlock);
  if (!st.ok()) return st.WithContext("creating the budget tables");
  std::unique_ptr<Budgets> b(new Budgets(std::move(db), options));
  for (const BudgetConfig& c : configs) {
    const bool is_feature = c.key.empty();
    Limits& l = b->limits_[{is_feature, is_feature ? c.feature : c.key}];
    l.daily_usd = Stricter(l.daily_usd, c.daily_usd);
    l.monthly_usd = Stricter(l.monthly_usd, c.monthly_usd);
  }
  return b;
}

const Budgets::Limits* Budgets::Find(bool is_feature, std::string_view name) const {
  if (name.empty()) return nullptr;
  auto it = limits_.find(std::pair<bool, std::string>(is_feature, std::string(name)));
  return it == limits_.end() ? nullptr : &it->second;
}

Expected<Budgets::Reservation> Budgets::Reserve(std::string_view key_name, std::string_view feature,
                                                double estimate_usd, Time now) {
  if (!std::isfinite(estimate_usd) || estimate_usd < 0) estimate_usd = 0;
  const int64_t now_ms = UnixMs(now);
  RetryPending();
  std::vector<std::pair<bool, std::string>> subjects;
  if (Find(false, key_name)) subjects.emplace_back(false, std::string(key_name));
  if (Find(true, feature)) subjects.emplace_back(true, std::string(feature));
  Reservation res;
  if (subjects.empty()) return res;
  res.id = http::RandomItemId("bud_");
  res.estimate_usd = estimate_usd;
  const int64_t expires_ms = now_ms + static_cast<int64_t>(options_.reservation_ttl_s * 1000);
  Status refusal = Status::Ok();
  Status st = db_->Transaction([&](SqlTx& tx) -> Status {
    refusal = Status::Ok();
    // Key before feature, day before month: every gateway locks in one order.
    for (const auto& [is_feature, name] : subjects) {
      const Limits& l = *Find(is_feature, name);
      for (const WindowKey& w : WindowsAt(l.daily_usd, l.monthly_usd, now_ms)) {
        ASSIGN_OR_RETURN(auto state, WindowState(tx, is_feature, name, w, now_ms, true));
        const auto [spent, reserved] = state;
        const bool reached = spent >= w.limit_usd;
        if (!reached && spent + reserved + estimate_usd <= w.limit_usd) continue;
        const std::string what = fmt::format(
            "{} '{}' {} budget {}", is_feature ? "feature" : "API key", name,
            w.period == std::string_view("day") ? "daily" : "monthly", Usd(w.limit_usd));
        const std::string resets = FormatRfc3339Ms(w.end_ms);
        const std::string in_flight =
            reserved > 0 ? fmt::format(" (and {} reserved by requests in flight)", Usd(reserved))
                         : "";
        refusal = reached ? ResourceExhausted("{} reached: spent {}{} (resets at {})", what,
                                              Usd(spent), in_flight, resets)
                          : ResourceExhausted(
                                "{} would be exceeded: spent {}{}, this request is estimated at {} "
                                "(resets at {})",
                                what, Usd(spent), in_flight, Usd(estimate_usd), resets);
        return refusal;  // rolls back: nothing reserved
      }
    }
    for (const auto& [is_feature, name] : subjects) {
      const Limits& l = *Find(is_feature, name);
      for (const WindowKey& w : WindowsAt(l.daily_usd, l.monthly_usd, now_ms)) {
        RETURN_IF_ERROR(tx.Run(kInsertReservation, {res.id, KindName(is_feature), name, w.period,
                                                    w.start_ms, estimate_usd, expires_ms})
                            .status());
      }
    }
    return Status::Ok();
  });
  if (!refusal.ok()) return refusal;
  if (!st.ok()) return Status(StatusCode::kUnavailable, st.message());
  int64_t due = next_sweep_ms_.load();
  if (now_ms >= due &&
      next_sweep_ms_.compare_exchange_strong(due, now_ms + kSweepReservationsEveryMs)) {
    (void)db_->Run(kSweepReservations, {now_ms});
  }
  return res;
}

Status Budgets::SettleNow(const Unsettled& u) {
  const int64_t t = UnixMs(u.arrival);
  return db_->Transaction([&](SqlTx& tx) -> Status {
    for (bool is_feature : {false, true}) {
      const std::string name(is_feature ? u.feature : u.key_name);
      const Limits* l = Find(is_feature, name);
      if (l == nullptr) continue;
      for (const WindowKey& w : WindowsAt(l->daily_usd, l->monthly_usd, t)) {
        bool add = true;
        if (!u.r.id.empty()) {
          // Idempotent: the spend is added with the reservation's removal, once.
          ASSIGN_OR_RETURN(SqlRows d,
                           tx.Run(kDropReservation, {u.r.id, KindName(is_feature), w.period}));
          add = d.changed > 0;
        }
        if (add && u.cost_usd > 0) {
          RETURN_IF_ERROR(
              tx.Run(kAddSpend, {KindName(is_feature), name, w.period, w.start_ms, u.cost_usd})
                  .status());
        }
      }
    }
    return Status::Ok();
  });
}

void Budgets::Settle(const Reservation& r, std::string_view key_name, std::string_view feature,
                     double cost_usd, Time arrival) {
  if (!std::isfinite(cost_usd) || cost_usd < 0) cost_usd = 0;
  if (r.id.empty() && (cost_usd <= 0 || (!Find(false, key_name) && !Find(true, feature)))) return;
  Unsettled u{r, std::string(key_name), std::string(feature), cost_usd, arrival};
  Status st = SettleNow(u);
  if (st.ok()) return;
  log::Warn("gateway: budget settlement kept for later (the database failed: {})", st.message());
  std::lock_guard lock(pending_mu_);
  if (pending_.size() >= kMaxPendingSettlements) {
    log::Error("gateway: {} budget settlements wait for the database; the oldest is dropped",
               pending_.size());
    pending_.pop_front();
  }
  pending_.push_back(std::move(u));
}

void Budgets::RetryPending() {
  std::deque<Unsettled> todo;
  {
    std::lock_guard lock(pending_mu_);
    if (pending_.empty()) return;
    todo.swap(pending_);
  }
  while (!todo.empty()) {
    if (!SettleNow(todo.front()).ok()) break;
    todo.pop_front();
  }
  if (todo.empty()) return;
  std::lock_guard lock(pending_mu_);
  for (auto it = todo.rbegin(); it != todo.rend(); ++it) pending_.push_front(std::move(*it));
}

size_t Budgets::pending_settlements() {
  std::lock_guard lock(pending_mu_);
  return pending_.size();
}

Expected<nlohmann::ordered_json> Budgets::SnapshotJson(Time now,
                                                       const std::vector<std::string>* only_keys) {
  const int64_t now_ms = UnixMs(now);
  RetryPending();
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  Status st = db_->Transaction([&](SqlTx& tx) -> Status {
    data = nlohmann::ordered_json::array();
    for (bool is_feature : {false, true}) {
      if (is_feature && only_keys) continue;
      for (const auto& [subject, l] : limits_) {
        if (subject.first != is_feature) continue;
        const std::string& name = subject.second;
        if (only_keys &&
            std::find(only_keys->begin(), only_keys->end(), name) == only_keys->end()) {
          continue;
        }
        nlohmann::ordered_json entry = {{"kind", KindName(is_feature)},
                                        {"name", name},
                                        {"daily", nullptr},
                                        {"monthly", nullptr}};
        for (const WindowKey& w : WindowsAt(l.daily_usd, l.monthly_usd, now_ms)) {
          ASSIGN_OR_RETURN(auto state, WindowState(tx, is_feature, name, w, now_ms, false));
          const auto [spent, reserved] = state;
          entry[w.period == std::string_view("day") ? "daily" : "monthly"] = {
              {"limit_usd", w.limit_usd},
              {"spent_usd", spent},
              {"reserved_usd", reserved},
              {"remaining_usd", std::max(0.0, w.limit_usd - spent - reserved)},
              {"resets_at", FormatRfc3339Ms(w.end_ms)}};
        }
        data.push_back(std::move(entry));
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) return Status(StatusCode::kUnavailable, st.message());
  return nlohmann::ordered_json{{"object", "budgets"}, {"data", std::move(data)}};
}

}  // namespace brisk::gateway
