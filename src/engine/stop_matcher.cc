#include "engine/stop_matcher.h"

#include <algorithm>

namespace brisk {

Status StopMatcher::Validate(const std::vector<std::string>& stops) {
  if (stops.size() > kMaxStops)
    return InvalidArgument("stop: at most {} stop strings are allowed, got {}", kMaxStops,
                           stops.size());
  for (size_t i = 0; i < stops.size(); ++i)
    if (stops[i].empty()) return InvalidArgument("stop[{}]: stop strings must not be empty", i);
  return Status::Ok();
}

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) continue;
    stops_.push_back(std::move(stops[i]));
    index_.push_back(static_cast<int>(i));
  }
}

StopMatcher::Result StopMatcher::Push(std::string_view piece) {
  Result r;
  if (stopped()) {
    r.stopped = true;
    return r;
  }
  if (stops_.empty()) {
    r.emit.assign(piece);
    return r;
  }
  held_.append(piece);

  // The held-back text holds no complete stop string (or we would have
  // stopped), so any match found here ends inside the new piece.
  size_t best_pos = std::string::npos;
  size_t best_end = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t pos = held_.find(stops_[i]);
    if (pos == std::string::npos) continue;
    const size_t end = pos + stops_[i].size();
    if (end < best_end || (end == best_end && pos < best_pos)) {
      best_pos = pos;
      best_end = end;
      matched_ = index_[i];
    }
  }
  if (stopped()) {
    r.emit = held_.substr(0, best_pos);
    r.stopped = true;
    held_.clear();
    return r;
  }

  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t len = std::min(s.size() - 1, held_.size()); len > hold; --len) {
      if (std::string_view(held_).substr(held_.size() - len) ==
          std::string_view(s).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  r.emit = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return r;
}

std::string StopMatcher::Flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace brisk
