// Splits what a tool-call-constrained generation writes (openai_tools.h,
// compact, "name" first, as the grammar forces) into OpenAI's tool-call
// pieces as the text streams in: a call's name as soon as it is complete,
// then its arguments' JSON text in fragments. The first byte tells the
// shape: '[' a JSON array of calls (complete at its ']'); '{' one call
// {"name":"f","arguments":{...}}, or several with separator text between
// them that holds no '{' (tool_choice "auto" with a call marker:
// "\n</tool_call>\n<tool_call>\n"; complete once a call closed and no other
// is open). Text of any split is accepted; the grammar guarantees the
// shape, so the parser only tracks strings and nesting.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brisk::api {

struct ToolCallDelta {
  int index = 0;          // which call (0-based)
  std::string name;       // set once, on the call's first delta
  std::string arguments;  // a fragment of the arguments' JSON text
};

class ToolCallParser {
 public:
  // Appends the deltas `text` completes (a name that is not complete yet
  // waits for the rest).
  void Feed(std::string_view text, std::vector<ToolCallDelta>* out);
  // The output read so far closed every call it opened (at least one): a
  // separator's start after the last one is not a call.
  bool complete() const {
    return state_ == State::kDone || (!array_ && calls_ > 0 && state_ == State::kAfterCall);
  }
  int num_calls() const { return calls_; }  // calls whose closing "}" was read

 private:
  enum class State { kStart, kKey, kName, kBeforeArgs, kArgs, kAfterCall, kDone };
  bool array_ = false;  // the output is a JSON array (its first byte was '[')
  State state_ = State::kStart;
  std::string buf_;  // the name, or the text matched against a key
  int calls_ = 0;
  int depth_ = 0;  // nesting inside the arguments
  bool in_string_ = false, escape_ = false;
};

}  // namespace brisk::api
