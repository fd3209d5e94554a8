// What RolloutManager keeps per tier, for its .cc files (rollout_manager.cc:
// syncing and routing; rollout_admin.cc: the admin API).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gateway/rollout.h"
#include "gateway/rollout_manager.h"
#include "gateway/rollout_store.h"

namespace brisk::gateway {

struct RolloutManager::TierSlot {
  std::shared_ptr<Rollout> rollout;  // the current one, as the database last said
  StoredRollout record;              // its shared record (version)
  std::shared_ptr<TierRuntime> candidate;
  std::string candidate_of;  // the rollout id the candidate's clients were built for
  std::vector<std::shared_ptr<Rollout>> history;  // finished, newest first
};

// Audit entries GET /admin/audit answers with.
inline constexpr int kAuditKept = 500;

// Wall-clock now, in Unix milliseconds.
inline int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace brisk::gateway
