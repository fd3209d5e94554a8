// The gateway's store of the Responses API: the objects of `store: true`
// responses and their conversations, in the gateway's database (sql_db.h),
// so a follow-up naming previous_response_id continues the conversation
// whichever gateway and engine answer it, and GET / DELETE
// /v1/responses/{id} find it through any gateway.
//
// The engines behind the gateway keep nothing: the gateway sends each of
// them the whole conversation (the stored items, then the new input) with
// `store: false`.
//
// Bounded as `brisk serve`'s in-memory store is: per tenant (the API key's
// tenant; "" without keys) at most max_entries responses and max_bytes of
// JSON text, the oldest evicted first (by creation: a read does not refresh
// an entry, which would turn every read into a write), and an entry older
// than ttl_s is gone. Lookups are by tenant and id: another tenant's id is
// not found. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gateway/sql_db.h"
#include "util/status.h"

namespace brisk::gateway {

struct ResponseStoreLimits {
  int64_t max_entries = 1024;             // per tenant
  int64_t max_bytes = int64_t{64} << 20;  // per tenant
  int64_t ttl_s = 24 * 3600;
};

struct StoredResponseText {
  std::string response;      // the response object as GET returns it
  std::string input_items;   // this request's input as items (GET .../input_items)
  std::string conversation;  // every item so far: the previous conversation, this
                             // input, this response's output (a follow-up's input)
};

class SharedResponseStore {
 public:
  // Creates the table if missing (serialized between gateways starting together).
  static Expected<std::unique_ptr<SharedResponseStore>> Open(std::unique_ptr<SqlDb> db,
                                                             ResponseStoreLimits limits);

  // Stores (or replaces) `id` for `tenant`, then evicts the tenant's oldest
  // entries until both bounds hold. An entry larger than max_bytes on its own
  // is not stored: kResourceExhausted.
  Status Put(const std::string& tenant, const std::string& id, const StoredResponseText& text,
             int64_t now_ms);
  // The entry; nullopt when absent, expired or another tenant's.
  Expected<std::optional<StoredResponseText>> Get(const std::string& tenant, const std::string& id,
                                                  int64_t now_ms);
  // Removes it; false when there was nothing to remove.
  Expected<bool> Erase(const std::string& tenant, const std::string& id);
  // Entries and bytes stored for `tenant` (expired ones included until evicted).
  Expected<std::pair<int64_t, int64_t>> Usage(const std::string& tenant);

  bool postgres() const { return db_->postgres(); }

 private:
  SharedResponseStore(std::unique_ptr<SqlDb> db, ResponseStoreLimits limits)
      : db_(std::move(db)), limits_(limits) {}

  std::unique_ptr<SqlDb> db_;
  const ResponseStoreLimits limits_;
  std::atomic<int64_t> next_sweep_ms_{0};  // when expired entries of every tenant are next removed
};

}  // namespace brisk::gateway
