// The in-memory store of the Responses API (POST /v1/responses with
// "store": true): finished response objects and their conversations, so a
// follow-up naming previous_response_id continues where the last one ended,
// and GET / DELETE /v1/responses/{id} find them.
//
// Bounded and expiring: each tenant (the API key's tenant; "" without keys)
// has its own LRU of at most max_entries responses and max_bytes of JSON
// text, so one tenant's traffic never evicts another's, and an entry older
// than ttl is gone. A response stored by one tenant is invisible to every
// other (lookups are by tenant and id). The number of tenants is bounded by
// the configured keys. Thread-safe; nothing survives a restart.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

namespace brisk {

struct StoredResponse {
  std::string id;
  // The response object as GET returns it.
  nlohmann::ordered_json response;
  // The whole conversation as chat messages, without the instructions:
  // the previous response's conversation, this request's input, this
  // response's output. A follow-up starts from it.
  nlohmann::ordered_json messages;
  // This request's input as Responses items, each with its id, for
  // GET /v1/responses/{id}/input_items.
  nlohmann::ordered_json input_items = nlohmann::ordered_json::array();
  size_t bytes = 0;  // JSON text of all three, what the byte bound counts
  std::chrono::steady_clock::time_point stored_at;
};

class ResponseStore {
 public:
  struct Limits {
    size_t max_entries = 1024;            // per tenant
    size_t max_bytes = size_t{64} << 20;  // per tenant
    std::chrono::seconds ttl{24 * 3600};
    // The time source (tests move it); default: steady_clock::now.
    std::function<std::chrono::steady_clock::time_point()> now;
  };

  ResponseStore();
  explicit ResponseStore(Limits limits);

  // Stores (or replaces) `id` for `tenant`, the most recently used entry;
  // older entries of the tenant are evicted until both bounds hold. An entry
  // larger than max_bytes on its own is not stored (returns false).
  bool Put(const std::string& tenant, const std::string& id, nlohmann::ordered_json response,
           nlohmann::ordered_json messages,
           nlohmann::ordered_json input_items = nlohmann::ordered_json::array());
  // The entry, marked most recently used; null when absent, expired or
  // another tenant's.
  std::shared_ptr<const StoredResponse> Get(const std::string& tenant, const std::string& id);
  // Removes it; false when there was nothing to remove.
  bool Erase(const std::string& tenant, const std::string& id);

  size_t entries(const std::string& tenant) const;
  size_t bytes(const std::string& tenant) const;

 private:
  struct TenantLru {
    std::list<std::shared_ptr<const StoredResponse>> order;  // front: most recent
    std::unordered_map<std::string, std::list<std::shared_ptr<const StoredResponse>>::iterator>
        index;
    size_t bytes = 0;
  };
  std::chrono::steady_clock::time_point Now() const;
  static void Remove(TenantLru& lru, std::list<std::shared_ptr<const StoredResponse>>::iterator it);

  const Limits limits_;
  mutable std::mutex mu_;
  std::map<std::string, TenantLru> tenants_;
};

}  // namespace brisk
