#include "gateway/fleet_members.h"

#include <chrono>

#include "gateway/utc_time.h"

namespace brisk::gateway {

using Json = nlohmann::json;

namespace {

constexpr const char* kCreate = R"sql(
CREATE TABLE IF NOT EXISTS brisk_gateways (
  instance TEXT PRIMARY KEY,
  address TEXT NOT NULL,
  started_ms BIGINT NOT NULL,
  seen_ms BIGINT NOT NULL,
  active_requests BIGINT NOT NULL,
  requests_total BIGINT NOT NULL
))sql";
constexpr const char* kSchemaLock = "SELECT pg_advisory_lock(7161726978)";
constexpr const char* kSchemaUnlock = "SELECT pg_advisory_unlock(7161726978)";
constexpr int64_t kForgetMs = 24 * 3600 * 1000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Expected<std::unique_ptr<FleetMembers>> FleetMembers::Open(std::unique_ptr<SqlDb> db) {
  const bool pg = db->postgres();
  if (pg) RETURN_IF_ERROR(db->Run(kSchemaLock).status());
  Status st = db->Run(kCreate).status();
  if (pg) (void)db->Run(kSchemaUnlock);
  if (!st.ok()) return st.WithContext("creating the gateways table");
  return std::unique_ptr<FleetMembers>(new FleetMembers(std::move(db)));
}

Status FleetMembers::Heartbeat(const FleetMember& m) {
  // ON CONFLICT ... DO UPDATE: the same statement in SQLite (3.24+) and PostgreSQL.
  return db_
      ->Run(
          "INSERT INTO brisk_gateways (instance, address, started_ms, seen_ms, "
          "active_requests, requests_total) VALUES ($1, $2, $3, $4, $5, $6) "
          "ON CONFLICT (instance) DO UPDATE SET address = excluded.address, "
          "seen_ms = excluded.seen_ms, active_requests = excluded.active_requests, "
          "requests_total = excluded.requests_total",
          {m.instance, m.address, m.started_ms, m.seen_ms, m.active_requests, m.requests_total})
      .status();
}

Expected<std::vector<FleetMember>> FleetMembers::List(int64_t seen_since_ms, int64_t now_ms) {
  (void)db_->Run("DELETE FROM brisk_gateways WHERE seen_ms < $1", {now_ms - kForgetMs});
  ASSIGN_OR_RETURN(SqlRows rows,
                   db_->Run("SELECT instance, address, started_ms, seen_ms, active_requests, "
                            "requests_total FROM brisk_gateways WHERE seen_ms >= $1 ORDER BY "
                            "started_ms, instance",
                            {seen_since_ms}));
  std::vector<FleetMember> out;
  for (const auto& row : rows.rows) {
    FleetMember m;
    m.instance = row[0];
    m.address = row[1];
    m.started_ms = SqlInt(row[2]);
    m.seen_ms = SqlInt(row[3]);
    m.active_requests = SqlInt(row[4]);
    m.requests_total = SqlInt(row[5]);
    out.push_back(std::move(m));
  }
  return out;
}

Json FleetMemberJson(const FleetMember& m, int64_t now_ms, const std::string& self) {
  return {{"instance", m.instance},
          {"address", m.address},
          {"this_gateway", m.instance == self},
          {"started_at", FormatRfc3339Ms(m.started_ms)},
          {"seconds_since_seen", static_cast<double>(now_ms - m.seen_ms) / 1000},
          {"active_requests", m.active_requests},
          {"requests_total", m.requests_total}};
}

void FleetView::Store(Json gateways, Json decisions, bool database_ok) {
  std::lock_guard lock(mu_);
  gateways_ = std::move(gateways);
  if (!decisions.is_null()) decisions_ = std::move(decisions);
  database_ok_ = database_ok;
  updated_ms_ = NowMs();
}

void FleetView::SetAddress(std::string address) {
  std::lock_guard lock(mu_);
  address_ = std::move(address);
}

std::string FleetView::address() const {
  std::lock_guard lock(mu_);
  return address_;
}

Json FleetView::Snapshot() const {
  std::lock_guard lock(mu_);
  return {{"gateways", gateways_},
          {"decisions", decisions_},
          {"database", database_ok_ ? "ok" : "unreachable"},
          {"seconds_since_update",
           updated_ms_ ? Json(static_cast<double>(NowMs() - updated_ms_) / 1000) : Json(nullptr)}};
}

}  // namespace brisk::gateway
