// Stop strings over streamed text. Push() each detokenized piece; the
// matcher emits at once all text that cannot be part of a stop string and
// holds back only the longest tail that is a prefix of some stop string.
// On a match it emits the text before the stop string and reports stopped;
// the stop string itself and anything after it are never emitted (OpenAI).
//
// When stop strings overlap, the match that ends first in the text wins (on a
// tie, the one that starts first). That rule does not depend on how the text
// was cut into pieces, so the same text always stops at the same place.
// Matching is on bytes; for valid UTF-8 input and stop strings the emitted
// text never splits a character (a held-back tail starts where a stop string
// starts, on a character boundary).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace brisk {

class StopMatcher {
 public:
  // OpenAI allows 4 stop strings; we accept up to 16 so that chat templates
  // can add their own end markers on top of the user's 4.
  static constexpr size_t kMaxStops = 16;

  // InvalidArgument if there are more than kMaxStops strings or one is empty.
  static Status Validate(const std::vector<std::string>& stops);

  // `stops` should have passed Validate(); empty strings are ignored.
  explicit StopMatcher(std::vector<std::string> stops);

  struct Result {
    std::string emit;      // text safe to send to the client now
    bool stopped = false;  // a stop string matched; emit ends just before it
  };

  // Feeds the next piece of text. After a stop, returns {"", true} forever.
  Result Push(std::string_view piece);

  // End of stream without a stop: returns the held-back text and clears it.
  // Returns "" after a stop.
  std::string Flush();

  bool stopped() const { return matched_ >= 0; }
  // Index into the constructor's `stops` of the string that matched, or -1.
  int matched_index() const { return matched_; }
  // Bytes currently held back (a prefix of some stop string).
  size_t held_bytes() const { return held_.size(); }

 private:
  std::vector<std::string> stops_;
  std::vector<int> index_;  // stops_[i] came from constructor position index_[i]
  std::string held_;
  int matched_ = -1;
};

}  // namespace brisk
