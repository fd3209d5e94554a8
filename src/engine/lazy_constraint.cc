#include "engine/lazy_constraint.h"

#include <algorithm>
#include <utility>

#include "grammar/token_constraint.h"

namespace brisk {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace

LazyTriggerMatcher::LazyTriggerMatcher(ConstraintTrigger trigger) : trigger_(std::move(trigger)) {}

LazyTriggerMatcher::Result LazyTriggerMatcher::Push(std::string_view piece) {
  Result r;
  if (triggered_) {
    r.constrained.assign(piece);
    return r;
  }
  if (trigger_.at_start && passed_start_) {
    r.content.assign(piece);
    return r;
  }
  held_.append(piece);
  const std::string_view t = trigger_.text;
  // `fired`: the trigger text that matched (text or alt_text).
  const auto fire = [&](size_t pos, size_t content_end, std::string_view fired) {
    r.content = held_.substr(0, content_end);
    r.triggered = triggered_ = true;
    if (trigger_.in_grammar) r.constrained = fired;
    r.constrained += held_.substr(pos + fired.size());
    held_.clear();
  };

  if (trigger_.at_start) {
    // Leading whitespace is held (and dropped on a trigger); the first other
    // bytes either grow into a trigger or end the watch for good.
    const size_t ws =
        static_cast<size_t>(std::find_if_not(held_.begin(), held_.end(), IsSpace) - held_.begin());
    const std::string_view rest = std::string_view(held_).substr(ws);
    const std::string_view alt = trigger_.alt_text;
    if (rest.starts_with(t)) {
      fire(ws, 0, t);
    } else if (!alt.empty() && rest.starts_with(alt)) {
      fire(ws, 0, alt);
    } else if (!t.starts_with(rest) && (alt.empty() || !alt.starts_with(rest))) {
      passed_start_ = true;
      r.content.swap(held_);
    }
    return r;
  }

  // The held text holds no whole trigger (or it would have fired), so a
  // match found here ends inside the new piece.
  if (const size_t pos = held_.find(t); pos != std::string::npos) {
    fire(pos, pos, t);
    return r;
  }
  // Hold back the longest tail that is a proper prefix of the trigger.
  size_t hold = 0;
  for (size_t len = std::min(t.size() - 1, held_.size()); len > 0; --len) {
    if (std::string_view(held_).substr(held_.size() - len) == t.substr(0, len)) {
      hold = len;
      break;
    }
  }
  r.content = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return r;
}

std::string LazyTriggerMatcher::Flush() {
  std::string out;
  out.swap(held_);
  return out;
}

size_t AdvanceAccepted(TokenConstraint* grammar, std::string_view text) {
  // Byte by byte: once per trigger, a few bytes.
  size_t n = 0;
  while (n < text.size() && grammar->AdvanceBytes(text.substr(n, 1))) ++n;
  return n;
}

}  // namespace brisk
