// Byte-level incremental recognizer for a CfgGrammar (cfg.h): an Earley
// recognizer over bytes with the nullable-prediction rule of Aycock and
// Horspool (predicting a nullable rule also steps over it, so completions
// of empty derivations need no second pass).
//
// The chart is append-only: set k holds the items after k bytes. Advance()
// appends one set and Rollback(k) truncates back to k sets in O(1), which
// is how the token-mask walk (cfg_mask.h) explores the vocabulary trie
// without copying state.
//
// Advance() accepts a byte only if some accepted text starts with the
// bytes so far plus that byte (the next set is non-empty; the grammar has
// no unproductive rules, so every item can still complete). CanEnd() is
// true when the bytes so far are an accepted text.
//
// Limits: kMaxItemsPerSet items in one set, kMaxChartItems in the whole
// chart, kMaxWorkPerSet items looked at by one set's completions; a byte
// that would exceed any is rejected (a text is refused, never accepted
// wrongly), so one byte costs bounded time however ambiguous the grammar.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/cfg.h"

namespace brisk {

class CfgMatcher {
 public:
  static constexpr size_t kMaxItemsPerSet = 4096;
  static constexpr size_t kMaxChartItems = size_t{1} << 21;
  // Items that completions of one set may look at (ambiguous grammars).
  static constexpr size_t kMaxWorkPerSet = size_t{1} << 16;

  CfgMatcher() = default;
  // Keeps `grammar` alive for the matcher's life.
  explicit CfgMatcher(std::shared_ptr<const CfgGrammar> grammar);

  // Consumes one byte; false (and no change) if no accepted text starts
  // with the bytes so far plus `byte`.
  bool Advance(uint8_t byte);
  // All bytes or none: false leaves the state unchanged.
  bool AdvanceBytes(std::string_view bytes);
  bool CanEnd() const;
  // No byte can follow (the text is complete and nothing may extend it).
  bool Finished() const;

  // Bytes consumed + 1 (sets in the chart).
  size_t num_sets() const { return set_start_.size(); }
  // Back to the state after num_sets() == `sets` (sets <= num_sets(), >= 1).
  void Rollback(size_t sets);

  // Copies `other`'s state into this one, keeping this one's buffers.
  void CopyFrom(const CfgMatcher& other);

  const CfgGrammar* grammar() const { return g_.get(); }
  size_t num_items() const { return items_.size(); }

 private:
  struct Item {
    uint32_t pos;     // index into grammar syms: the symbol after the dot
    uint32_t origin;  // the set where the production started
    uint32_t sym;     // syms[pos], kept here so scans read one array
  };

  // Adds `item` to the last set unless it is there already; false when a
  // limit is hit. `unique`: it cannot be there already, no lookup needed.
  // Predicted items (dot at a production's start, origin = this set) come
  // only from the one prediction of their rule, and scanned items (after a
  // terminal) only from distinct items of the previous set; completions
  // and nullable steps (after a rule) are the only duplicates.
  bool Add(uint32_t pos, uint32_t origin, bool unique = false);
  // Marks a key (an item, a predicted rule, a completed (rule, origin));
  // true if it was new in the current set.
  bool Insert(uint64_t key);
  // Predictions and completions of the last set.
  bool Closure();
  void NewGeneration();
  // Doubles the dedupe table, keeping the current generation's keys.
  void Grow();

  std::shared_ptr<const CfgGrammar> g_;
  std::vector<Item> items_;
  std::vector<uint32_t> set_start_;
  bool overflow_ = false;
  // Per-set dedupe: open addressing, entries valid when stamp == gen_.
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> stamps_;
  uint32_t gen_ = 0;
  size_t used_ = 0;  // keys in the current generation
};

}  // namespace brisk
