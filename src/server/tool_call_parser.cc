#include "server/tool_call_parser.h"

#include <cstdint>

namespace brisk::api {

void ToolCallParser::Feed(std::string_view text, std::vector<ToolCallDelta>* out) {
  // The delta this Feed appends argument bytes to (an index: out grows).
  size_t args = SIZE_MAX;
  for (char c : text) {
    switch (state_) {
      case State::kStart:
        if (c != '[' && c != '{') break;
        array_ = c == '[';
        state_ = array_ ? State::kAfterCall : State::kKey;
        buf_.clear();
        break;
      case State::kKey:  // inside {"name":" up to the name's first byte
        buf_ += c;
        if (buf_.ends_with("\"name\":\"")) {
          buf_.clear();
          state_ = State::kName;
        }
        break;
      case State::kName:  // names are [A-Za-z0-9_-]: no escapes
        if (c == '"') {
          out->push_back({calls_, buf_, ""});
          args = SIZE_MAX;
          buf_.clear();
          state_ = State::kBeforeArgs;
        } else {
          buf_ += c;
        }
        break;
      case State::kBeforeArgs:  // ,"arguments":
        buf_ += c;
        if (buf_.ends_with("\"arguments\":")) {
          buf_.clear();
          depth_ = 0;
          in_string_ = escape_ = false;
          state_ = State::kArgs;
        }
        break;
      case State::kArgs: {
        bool end_call = false;
        if (in_string_) {
          if (escape_) {
            escape_ = false;
          } else if (c == '\\') {
            escape_ = true;
          } else if (c == '"') {
            in_string_ = false;
          }
        } else if (c == '"') {
          in_string_ = true;
        } else if (c == '{' || c == '[') {
          ++depth_;
        } else if (c == '}' || c == ']') {
          if (depth_ == 0)
            end_call = true;  // the call object's own '}'
          else
            --depth_;
        }
        if (end_call) {
          ++calls_;
          args = SIZE_MAX;
          state_ = State::kAfterCall;
          break;
        }
        if (args == SIZE_MAX) {
          out->push_back({calls_, "", ""});
          args = out->size() - 1;
        }
        (*out)[args].arguments += c;
        break;
      }
      case State::kAfterCall:  // ',' (array) or a separator, then the next call; or ']'
        if (c == '{') {
          buf_.clear();
          state_ = State::kKey;
        } else if (array_ && c == ']') {
          state_ = State::kDone;
        }
        break;
      case State::kDone: break;
    }
  }
}

}  // namespace brisk::api
