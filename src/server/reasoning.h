// Reasoning output apart from the answer: models such as Qwen3 and
// DeepSeek-R1 write their thinking between two markers ("<think>" ...
// "</think>") before the answer. As vLLM's reasoning parsers and
// llama-server's --reasoning-format do, the front door returns that text as
// `reasoning_content` (chat; streamed as deltas) or a reasoning item (the
// Responses API), so `content` holds only the answer.
//
// Which markers: inference.yaml `model.reasoning` (docs/config.md): "auto"
// takes "<think>"/"</think>" when the chat template names both, "off" never
// splits, or the two markers given.
//
// Where the output starts, from the rendered prompt's end (its generation
// turn):
//   - kInside: the template opened the block ("...<think>\n", DeepSeek-R1's):
//     the output is reasoning until the end marker;
//   - kClosed: the template closed it ("<think>\n\n</think>\n\n", Qwen3 with
//     enable_thinking false): the output is the answer;
//   - kOpen: neither: the output is reasoning when it starts with the start
//     marker, else the answer.
// A constraint (response_format, a forced tool call) holds for the answer
// only: under kOpen the front door opens the block itself (adds the start
// marker to the prompt: kInside) and the constraint starts at the end marker.
#pragma once

#include <string>
#include <string_view>

#include "engine/generation.h"

namespace brisk {

struct ReasoningMarkers {
  std::string start, end;
  bool enabled() const { return !start.empty() && !end.empty(); }
  bool operator==(const ReasoningMarkers&) const = default;
};

// `setting` is model.reasoning's value: "auto" (the template's markers, if it
// has both "<think>" and "</think>"), "off", or the markers themselves (as
// config parsed them into `configured`).
ReasoningMarkers ResolveReasoningMarkers(std::string_view setting,
                                         const ReasoningMarkers& configured,
                                         std::string_view template_source);

enum class ReasoningStart { kOpen, kInside, kClosed };

// Where the output of a prompt rendered as `prompt` starts (see above): by the
// markers at its very end (trailing whitespace aside).
ReasoningStart PromptReasoningStart(std::string_view prompt, const ReasoningMarkers& markers);

// Splits one sample's streamed text into reasoning and answer. A piece that
// could still be a marker's start is held back until it is known; so is
// whitespace at the end of the reasoning. The markers themselves, whitespace
// at the reasoning's start and end, and whitespace between the end marker and
// the answer are dropped.
class ReasoningSplitter {
 public:
  ReasoningSplitter() = default;  // off: everything is answer
  ReasoningSplitter(ReasoningMarkers markers, ReasoningStart start);

  struct Parts {
    std::string reasoning;
    std::string content;
  };
  // The parts `text` completes (appended to `out`).
  void Push(std::string_view text, Parts* out);
  // End of the output: what was held back.
  void Flush(Parts* out);
  // The answer began (the reasoning is over, or there was none).
  bool in_answer() const { return state_ == State::kAnswer || state_ == State::kAfterEnd; }
  // Ends the reasoning here (a constraint's trigger at the end marker fired:
  // the engine dropped the marker). What was held is reasoning.
  void EndReasoning(Parts* out);

 private:
  enum class State { kStart, kReasoning, kAfterEnd, kAnswer };
  ReasoningMarkers markers_;
  State state_ = State::kAnswer;
  bool reasoning_began_ = false;  // a non-space reasoning byte went out
  std::string held_;
};

// One sample's split for the response streams: takes the reasoning out of
// each engine output and keeps SequenceOutput::constrained_from right for
// what is left. Text from a constraint's trigger on is never split.
class ReasoningTap {
 public:
  ReasoningTap() = default;  // off: outputs pass as they are
  // `constraint_after_reasoning`: the constraint's trigger is the end marker
  // (PreparedRequest::constraint_after_reasoning): where it fires, the
  // reasoning ends.
  ReasoningTap(ReasoningMarkers markers, ReasoningStart start, bool constraint_after_reasoning)
      : splitter_(std::move(markers), start),
        on_(true),
        after_reasoning_(constraint_after_reasoning) {}

  bool on() const { return on_; }
  // `out` without its reasoning, which is appended to `reasoning`.
  SequenceOutput Take(const SequenceOutput& out, std::string* reasoning);

 private:
  ReasoningSplitter splitter_;
  bool on_ = false;
  bool after_reasoning_ = false;
  bool constrained_ = false;  // the trigger fired: the rest is constrained text
};

}  // namespace brisk
