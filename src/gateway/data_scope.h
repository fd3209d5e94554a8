// Whose cost data a caller may read on the gateway: GET /v1/cost, /v1/budgets
// and the cost part of /dashboard/data.
//
//   - the rollout admin key (rollout.admin_key), or a key with `role: admin`:
//     every tenant's;
//   - any other configured key: its own tenant's (its rows in the ledger, the
//     budgets of that tenant's keys; feature budgets, which add up every
//     tenant's spend, only for admins);
//   - a gateway without `keys:` has no tenants to keep apart: everything.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/gateway_config.h"

namespace brisk::gateway {

struct DataScope {
  bool all = false;                    // every tenant's data
  std::string tenant;                  // else only this tenant's
  std::vector<std::string> key_names;  // the names of that tenant's keys (for budgets)

  // "all" or "tenant:<name>": what the answer says it covers.
  std::string Describe() const { return all ? "all" : "tenant:" + tenant; }
};

// The scope of the caller presenting `authorization`, or nullopt when it presents
// neither a configured key nor the admin key (a 401; see UnauthorizedError).
std::optional<DataScope> ResolveDataScope(const GatewayConfig& config,
                                          std::string_view authorization);

}  // namespace brisk::gateway
