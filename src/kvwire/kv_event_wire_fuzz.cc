// libFuzzer target (BRISK_FUZZ=ON): any bytes as a KV event batch's payload
// (what an engine, or anything else on the port, sends the gateway's
// subscriber) must decode to a batch or a clean error, never a crash; a
// decoded batch's events keep their invariants.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kvwire/kv_event_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto batch =
      brisk::DecodeKvEventBatch(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!batch.ok()) return 0;
  for (const brisk::DecodedKvEvent& e : batch->events) {
    if (e.num_tokens < 0) std::abort();
    if (e.type == brisk::KvEvent::Type::kAllBlocksCleared && !e.blocks.empty()) std::abort();
  }
  return 0;
}
