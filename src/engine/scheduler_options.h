// What the scheduler (engine/scheduler.h) is told: the one declaration of the
// scheduling options. The engine (EngineOptions::scheduler) and the serving
// profile (inference.yaml's scheduler, cache and limits keys:
// InferenceConfig::Scheduler) hold this struct instead of copies of its
// fields. Plain data with no dependencies, so the configuration can name it
// without linking the engine.
#pragma once

#include "engine/priority.h"

namespace brisk {

struct SchedulerOptions {
  int max_batch_tokens = 512;         // tokens per step
  int max_concurrent_sequences = 64;  // running sequences
  int prefill_chunk_tokens = 0;       // per sequence per step; 0 = max_batch_tokens
  int block_size = 16;                // tokens per KV block
  bool continuous_batching = true;
  bool prefix_cache = true;
  double aging_s = 5;      // batch sequences waiting this long rank as interactive
  bool fair_share = true;  // running slots shared equally between tenants
  int max_waiting[kNumPriorities] = {256, 1024};  // waiting-queue bound per priority
  // Positions a local layer sees, when the pool gives blocks local pages
  // (KvBlockPool::locals_per_block > 0); 0: no window freeing. The engine
  // sets it from the model.
  int sliding_window = 0;
  bool operator==(const SchedulerOptions&) const = default;
};

}  // namespace brisk
