// Byte-level incremental acceptor for a JsonGrammar (json_grammar.h).
//
// The state is a small set of "threads", each a stack of frames (one frame
// per JSON value being matched: the object, the array inside it, the string
// inside that). A union (type array, anyOf, $ref alias) is resolved on the
// first byte of its value: alternatives whose first byte does not fit are
// dropped without copying, and only alternatives that share a first byte
// (two object schemas) run side by side as separate threads until the bytes
// tell them apart.
//
// Advance() accepts a byte only if the prefix so far can still be completed
// into a value the grammar accepts, so a matcher never walks into a dead end
// (up to the two limits below, and to unsatisfiable subschemas such as an
// array whose items are `false` but with minItems > 0, which the compiler
// turns into "never").
//
// Limits: nesting depth kMaxDepth frames and kMaxThreads live threads;
// bytes that would exceed either are rejected (a deeper instance is refused,
// never accepted wrongly).
//
// Copying: CopyFrom() reuses the destination's buffers, so the token-mask
// walk (token_mask.h) keeps one matcher per trie depth and copies into it
// without allocating.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "grammar/json_grammar.h"

namespace brisk {

struct MatchFrame {
  uint32_t node = 0;
  uint8_t phase = 0;
  uint8_t lex = 0;      // string lexer state
  uint8_t lex_aux = 0;  // \u digit index / UTF-8 bytes still expected
  uint8_t flags = 0;    // number: sign; string: UTF-8 range of the next byte
  uint32_t a = 0;  // string: code points; array: items; object: next property; literal: trie node
  uint32_t b = 0;  // object: key trie node; pattern string: DFA state
  // object: the key being matched (property index, kAdditionalKey or
  // kPatternKey); while inside the key, the key pattern's DFA state.
  uint32_t c = 0;
  // object: members so far, saturating at ObjectSpec::count_cap (0 without
  // min/maxProperties, so such frames compare as before).
  uint32_t count = 0;
  double num = 0;  // bounded number: magnitude so far

  bool operator==(const MatchFrame&) const = default;
};

class GrammarMatcher {
 public:
  static constexpr size_t kMaxDepth = 64;
  static constexpr size_t kMaxThreads = 64;

  GrammarMatcher() = default;
  // `grammar` must outlive the matcher (and its copies).
  explicit GrammarMatcher(const JsonGrammar* grammar);

  // Consumes one byte; false (and no change) if no accepted text starts with
  // the bytes so far plus `byte`.
  bool Advance(uint8_t byte);
  // All bytes or none: false leaves the state unchanged.
  bool AdvanceBytes(std::string_view bytes);
  // The bytes so far are a complete accepted value.
  bool CanEnd() const;
  // The value is complete and nothing may follow (only the end).
  bool Finished() const;

  // Copies `other`'s state into this one, keeping this one's buffers.
  void CopyFrom(const GrammarMatcher& other);

  // For the token-mask fast path: when every thread is inside a string (a
  // value, or a key where extra keys are allowed) between characters, the
  // largest number of further code points one of them may take (kUnbounded
  // if no limit): any byte string of complete UTF-8 characters without '"',
  // '\\' or control bytes of at most that many code points is accepted, and
  // leaves each thread that takes it as it was (but for the count); no
  // thread splits. -1 in every other state.
  int64_t PlainStringBudget() const;

  // For the token-mask walk: when every thread is inside a string with a
  // pattern (json_grammar.h), or inside an object key that only the key
  // pattern of patternProperties can still complete, true and, once for
  // each distinct one, the DFA and a frame of its state (DFA state in b,
  // characters in a, lexer state; keys are lexed canonically); false in
  // every other state. Bytes inside the strings never split a thread.
  struct PatternTop {
    const ByteDfa* dfa;
    MatchFrame frame;
    bool canonical = false;
    bool operator==(const PatternTop&) const = default;
  };
  bool PatternStrings(std::vector<PatternTop>* out) const;

  const JsonGrammar* grammar() const { return g_; }
  size_t num_threads() const { return ends_.size(); }

 private:
  enum class Outcome : uint8_t { kReject, kContinue, kDone, kDoneRefeed, kPush };
  struct StepResult {
    Outcome outcome;
    uint32_t child = kNoNode;  // kPush: the node of the value that starts with this byte
  };

  // Runs `byte` through one thread's stack, emitting the surviving thread(s)
  // into next_frames_/next_ends_.
  void Step(std::vector<MatchFrame>& stack, uint8_t byte);
  void Emit(const std::vector<MatchFrame>& stack);
  // The parent frame on top of `stack` learns that its child value ended.
  void ChildDone(MatchFrame& parent) const;
  // Whether a value of `node` can start with `byte` (unions: any branch).
  bool CanStartWith(uint32_t node, uint8_t byte, int depth = 0) const;
  bool CanFinish(const MatchFrame& f) const;
  // Which members may start next in an object frame: StepObject's rule,
  // shared with the fast paths so that they never disagree with it.
  struct NextMembers {
    uint32_t lo = 1, hi = 0;  // listed property indices [lo, hi]; empty when lo > hi
    bool extra = false;       // extra keys (additionalProperties or the key pattern)
    bool close = false;       // '}' may come now
  };
  NextMembers ObjectNextMembers(const ObjectSpec& s, const MatchFrame& f) const;
  // PlainStringBudget() of one thread whose top frame is `f`.
  int64_t PlainBudgetOf(const MatchFrame& f) const;
  void DedupeNext();

  StepResult StepString(MatchFrame& f, const GrammarNode& n, uint8_t byte) const;
  StepResult StepNumber(MatchFrame& f, const NumberSpec& spec, uint8_t byte) const;
  StepResult StepLiteral(MatchFrame& f, const ByteTrie& trie, uint8_t byte) const;
  StepResult StepObject(MatchFrame& f, const ObjectSpec& spec, uint8_t byte) const;
  StepResult StepArray(MatchFrame& f, const ArraySpec& spec, uint8_t byte) const;

  const JsonGrammar* g_ = nullptr;
  std::vector<MatchFrame> frames_;  // all threads' stacks, one after another
  std::vector<uint32_t> ends_;      // thread i is frames_[ends_[i-1], ends_[i])
  // Scratch for Advance().
  std::vector<MatchFrame> next_frames_;
  std::vector<uint32_t> next_ends_;
  std::vector<MatchFrame> work_;
};

// A frame that starts matching a value of `node`.
MatchFrame StartFrame(uint32_t node);

}  // namespace brisk
