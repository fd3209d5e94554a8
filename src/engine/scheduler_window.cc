// The scheduler's part in sliding-window KV (scheduler.h): local pages of
// blocks a sequence's window has left go back to the pool, and a
// prefix-cache hit is only used as far as the local layers still hold the
// window before it.
#include <algorithm>

#include "engine/scheduler.h"

namespace brisk {

int64_t Scheduler::PagesFor(int64_t n_tokens) const {
  const int64_t blocks = BlocksFor(n_tokens);
  if (!WindowPaging()) return pool_->PagesFor(blocks);
  // Local pages cover the window before the step's first position and the
  // step's own positions (at most max_batch_tokens), each rounded out to a
  // block at both ends.
  const int64_t window_blocks =
      std::min(blocks, BlocksFor(int64_t{opts_.sliding_window} + opts_.max_batch_tokens) + 1);
  return blocks + window_blocks * pool_->locals_per_block();
}

// The next token computed is at position num_computed and sees positions
// from num_computed - window + 1: blocks wholly before that are done for the
// local layers. Only a sequence holding a block alone drops its local pages
// (a block shared with a fork or another request keeps them while shared).
void Scheduler::DropOutOfWindow(SeqState& s) {
  const int64_t first_seen = int64_t{s.num_computed} - opts_.sliding_window + 1;
  const auto past = static_cast<int32_t>(std::min<int64_t>(
      first_seen > 0 ? first_seen / opts_.block_size : 0, static_cast<int64_t>(s.blocks.size())));
  for (int32_t i = s.num_window_checked; i < past; ++i)
    if (pool_->RefCount(s.blocks[i]) == 1) {
      pool_->DropLocals(s.blocks[i]);
      if (events_ && prefix_cache_.IsCached(s.blocks[i])) events_->LocalsDropped(s.blocks[i]);
    }
  s.num_window_checked = std::max(s.num_window_checked, past);
}

// Computing resumes at q = hits * block_size, and the local layers read
// positions [q - window + 1, q) from the cache: every block holding one of
// them must still have its local pages. The longest such run of the hits.
int32_t Scheduler::WindowedHits(const SeqState& s, int32_t hits) const {
  const int bs = opts_.block_size;
  for (int32_t h = hits; h > 0; --h) {
    const int64_t first = std::max<int64_t>(0, int64_t{h} * bs - opts_.sliding_window + 1);
    bool held = true;
    for (int64_t b = first / bs; b < h && held; ++b)
      held = !pool_->Locals(s.blocks[static_cast<size_t>(b)]).empty();
    if (held) return h;
  }
  return 0;
}

}  // namespace brisk
