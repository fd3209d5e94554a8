#pragma once

// The gateways on one ledger database, as each last reported itself: a row
// per gateway process, refreshed every second (FleetView), so that every
// gateway's dashboard lists the same replicas.

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gateway/sql_db.h"
#include "util/status.h"

namespace brisk::gateway {

struct FleetMember {
  std::string instance;  // the random part of its request ids
  std::string address;   // host:port it listens on
  int64_t started_ms = 0;
  int64_t seen_ms = 0;  // its last heartbeat
  int64_t active_requests = 0;
  int64_t requests_total = 0;
};

class FleetMembers {
 public:
  static Expected<std::unique_ptr<FleetMembers>> Open(std::unique_ptr<SqlDb> db);

  // Writes this gateway's row (inserted or replaced).
  Status Heartbeat(const FleetMember& m);
  // The gateways seen since `seen_since_ms`, oldest start first; rows not
  // seen for a day are deleted on the way.
  Expected<std::vector<FleetMember>> List(int64_t seen_since_ms, int64_t now_ms);

 private:
  explicit FleetMembers(std::unique_ptr<SqlDb> db) : db_(std::move(db)) {}
  std::unique_ptr<SqlDb> db_;
};

// What the dashboard's fleet view shows, refreshed by the heartbeat job and
// read by the dashboard without touching the database.
class FleetView {
 public:
  void Store(nlohmann::json gateways, nlohmann::json decisions, bool database_ok);
  nlohmann::json Snapshot() const;
  // host:port this gateway listens on (known once it listens).
  void SetAddress(std::string address);
  std::string address() const;

 private:
  mutable std::mutex mu_;
  nlohmann::json gateways_ = nlohmann::json::array();
  nlohmann::json decisions_ = nlohmann::json::array();
  bool database_ok_ = true;
  std::string address_;
  int64_t updated_ms_ = 0;
};

nlohmann::json FleetMemberJson(const FleetMember& m, int64_t now_ms, const std::string& self);

}  // namespace brisk::gateway
