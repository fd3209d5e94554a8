// Lazy constraints (llama.cpp's "lazy grammar"): a sample generates freely
// until a trigger string appears in its text; from there on the request's
// constraint (grammar/constraint.h) holds for the rest of the output. Used by
// tool_choice "auto" (server/openai_tools.h): the model may answer in text,
// or start a tool call by its template's marker ("<tool_call>") or, for
// templates without one, by a JSON object "{\"name\"" (or an array of them,
// "[{\"name\"") at the very start.
//
// LazyTriggerMatcher watches the streamed (detokenized) text: everything
// that cannot be part of the trigger is content and goes out at once; a
// tail that could still become the trigger is held back (as StopMatcher
// holds back a stop string's prefix) and released as content when it turns
// out not to be one, or at the end of the output (Flush).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace brisk {

class TokenConstraint;  // grammar/token_constraint.h

// GenerationRequest::constraint_trigger: plain data.
struct ConstraintTrigger {
  ConstraintTrigger() = default;
  ConstraintTrigger(std::string text, bool at_start, bool in_grammar, std::string alt_text = "")
      : text(std::move(text)),
        at_start(at_start),
        in_grammar(in_grammar),
        alt_text(std::move(alt_text)) {}

  // Empty: no trigger, the constraint holds from the first token.
  std::string text;
  // Only at the start of the output (after whitespace, which is then
  // dropped); elsewhere the trigger's text is plain content.
  bool at_start = false;
  // The trigger's bytes are the first bytes of the constrained text (a JSON
  // start such as {"name"); otherwise the trigger is a marker that is not
  // part of it (<tool_call>) and is dropped.
  bool in_grammar = false;
  // With at_start and in_grammar: a second text that is a trigger too
  // ("[{\"name\"": an array of tool calls); empty: none.
  std::string alt_text;
};

class LazyTriggerMatcher {
 public:
  // `trigger.text` must not be empty.
  explicit LazyTriggerMatcher(ConstraintTrigger trigger);

  struct Result {
    std::string content;      // text before the trigger, safe to send now
    bool triggered = false;   // the trigger matched in this piece
    std::string constrained;  // the constrained text this piece completes
  };

  // Feeds the next piece of text. Before the trigger: content (and on the
  // piece that completes the trigger, `triggered` with the text before it as
  // content and the constrained text after it). After the trigger every
  // piece is constrained text.
  Result Push(std::string_view piece);

  // End of the output without a trigger: the held-back text (content).
  // "" once triggered.
  std::string Flush();

  bool triggered() const { return triggered_; }
  // Bytes currently held back (a possible start of the trigger).
  size_t held_bytes() const { return held_.size(); }

 private:
  ConstraintTrigger trigger_;
  std::string held_;
  bool triggered_ = false;
  bool passed_start_ = false;  // at_start: the output began with other text
};

// Advances `grammar` over the longest prefix of `text` it accepts (bytes the
// model wrote unconstrained in the token that completed the trigger, e.g. a
// space the compact grammar does not take); returns that prefix's length.
size_t AdvanceAccepted(TokenConstraint* grammar, std::string_view text);

}  // namespace brisk
