#include "server/response_store.h"

#include <utility>

namespace brisk {

ResponseStore::ResponseStore() : ResponseStore(Limits{}) {}

ResponseStore::ResponseStore(Limits limits) : limits_(std::move(limits)) {}

std::chrono::steady_clock::time_point ResponseStore::Now() const {
  return limits_.now ? limits_.now() : std::chrono::steady_clock::now();
}

void ResponseStore::Remove(TenantLru& lru,
                           std::list<std::shared_ptr<const StoredResponse>>::iterator it) {
  lru.bytes -= (*it)->bytes;
  lru.index.erase((*it)->id);
  lru.order.erase(it);
}

bool ResponseStore::Put(const std::string& tenant, const std::string& id,
                        nlohmann::ordered_json response, nlohmann::ordered_json messages,
                        nlohmann::ordered_json input_items) {
  auto entry = std::make_shared<StoredResponse>();
  entry->id = id;
  // Counted as the JSON text they would be sent as: close to what they hold.
  const auto text_size = [](const nlohmann::ordered_json& j) {
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).size();
  };
  entry->bytes = id.size() + text_size(response) + text_size(messages) + text_size(input_items);
  entry->response = std::move(response);
  entry->messages = std::move(messages);
  entry->input_items = std::move(input_items);
  entry->stored_at = Now();
  std::lock_guard lock(mu_);
  TenantLru& lru = tenants_[tenant];
  if (auto it = lru.index.find(id); it != lru.index.end()) Remove(lru, it->second);
  if (entry->bytes > limits_.max_bytes || limits_.max_entries == 0) return false;
  while (!lru.order.empty() && (lru.order.size() + 1 > limits_.max_entries ||
                                lru.bytes + entry->bytes > limits_.max_bytes))
    Remove(lru, std::prev(lru.order.end()));
  lru.bytes += entry->bytes;
  lru.order.push_front(std::move(entry));
  lru.index[id] = lru.order.begin();
  return true;
}

std::shared_ptr<const StoredResponse> ResponseStore::Get(const std::string& tenant,
                                                         const std::string& id) {
  const auto now = Now();
  std::lock_guard lock(mu_);
  auto t = tenants_.find(tenant);
  if (t == tenants_.end()) return nullptr;
  TenantLru& lru = t->second;
  auto it = lru.index.find(id);
  if (it == lru.index.end()) return nullptr;
  if (now - (*it->second)->stored_at > limits_.ttl) {
    Remove(lru, it->second);
    return nullptr;
  }
  lru.order.splice(lru.order.begin(), lru.order, it->second);
  return lru.order.front();
}

bool ResponseStore::Erase(const std::string& tenant, const std::string& id) {
  std::lock_guard lock(mu_);
  auto t = tenants_.find(tenant);
  if (t == tenants_.end()) return false;
  auto it = t->second.index.find(id);
  if (it == t->second.index.end()) return false;
  Remove(t->second, it->second);
  return true;
}

size_t ResponseStore::entries(const std::string& tenant) const {
  std::lock_guard lock(mu_);
  auto t = tenants_.find(tenant);
  return t == tenants_.end() ? 0 : t->second.order.size();
}

size_t ResponseStore::bytes(const std::string& tenant) const {
  std::lock_guard lock(mu_);
  auto t = tenants_.find(tenant);
  return t == tenants_.end() ? 0 : t->second.bytes;
}

}  // namespace brisk
