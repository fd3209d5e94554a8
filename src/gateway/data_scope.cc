#include "gateway/data_scope.h"

#include "http/caller_identity.h"
#include "util/constant_time.h"

namespace brisk::gateway {
namespace {

DataScope Everything() {
  DataScope s;
  s.all = true;
  return s;
}

}  // namespace

std::optional<DataScope> ResolveDataScope(const GatewayConfig& config,
                                          std::string_view authorization) {
  const std::string& admin_key = config.rollout.admin_key;
  auto token = BearerToken(authorization);
  // admin_key is not empty here, so an empty token cannot match it.
  if (token && !admin_key.empty() && ConstantTimeEquals(*token, admin_key)) {
    return Everything();
  }
  if (config.keys.empty()) return Everything();
  const ApiKeyConfig* key = token ? FindApiKey(config.keys, *token) : nullptr;
  if (key == nullptr) return std::nullopt;
  if (key->admin) return Everything();
  DataScope scope;
  scope.tenant = key->tenant;
  for (const ApiKeyConfig& k : config.keys) {
    if (k.tenant == key->tenant) scope.key_names.push_back(k.name);
  }
  return scope;
}

}  // namespace brisk::gateway
