// Splits what a tool-call-constrained generation writes (openai_tools.h:
// {"name":"f","arguments":{...}}, or a JSON array of those, compact, "name"
// first, as the grammar forces) into OpenAI's tool-call pieces as the text
// streams in: a call's name as soon as it is complete, then its arguments'
// JSON text in fragments. Text of any split is accepted; the grammar
// guarantees the shape, so the parser only tracks strings and nesting.
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
  explicit ToolCallParser(bool array) : array_(array) {}
  // Appends the deltas `text` completes (a name that is not complete yet
  // waits for the rest).
  void Feed(std::string_view text, std::vector<ToolCallDelta>* out);
  // The whole output was read and it closed every call.
  bool complete() const { return state_ == State::kDone; }
  int num_calls() const { return calls_; }

 private:
  enum class State { kStart, kKey, kName, kBeforeArgs, kArgs, kAfterCall, kDone };
  bool array_;
  State state_ = State::kStart;
  std::string buf_;  // the name, or the text matched against a key
  int calls_ = 0;
  int depth_ = 0;  // nesting inside the arguments
  bool in_string_ = false, escape_ = false;
};

}  // namespace brisk::api
