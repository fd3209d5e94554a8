#include "server/reasoning.h"

#include <algorithm>

namespace brisk {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t FirstNonSpace(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

std::string_view TrimEnd(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The length of the longest proper prefix of `marker` that `s` ends with.
size_t PartialMarkerAtEnd(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ReasoningMarkers ResolveReasoningMarkers(std::string_view setting,
                                         const ReasoningMarkers& configured,
                                         std::string_view template_source) {
  if (setting == "off") return {};
  if (setting == "auto") {
    if (template_source.find("<think>") != std::string_view::npos &&
        template_source.find("</think>") != std::string_view::npos) {
      return {"<think>", "</think>"};
    }
    return {};
  }
  return configured;
}

ReasoningStart PromptReasoningStart(std::string_view prompt, const ReasoningMarkers& markers) {
  if (!markers.enabled()) return ReasoningStart::kClosed;
  const std::string_view p = TrimEnd(prompt);
  if (p.ends_with(markers.end)) return ReasoningStart::kClosed;
  if (p.ends_with(markers.start)) return ReasoningStart::kInside;
  return ReasoningStart::kOpen;
}

ReasoningSplitter::ReasoningSplitter(ReasoningMarkers markers, ReasoningStart start)
    : markers_(std::move(markers)) {
  if (!markers_.enabled()) return;
  state_ = start == ReasoningStart::kInside ? State::kReasoning
           : start == ReasoningStart::kOpen ? State::kStart
                                            : State::kAnswer;
}

void ReasoningSplitter::Push(std::string_view text, Parts* out) {
  held_ += text;
  for (;;) {
    switch (state_) {
      case State::kAnswer:
        out->content += held_;
        held_.clear();
        return;
      case State::kStart: {
        const std::string_view rest = std::string_view(held_).substr(FirstNonSpace(held_));
        if (rest.empty()) return;
        if (rest.starts_with(markers_.start)) {
          held_ = std::string(rest.substr(markers_.start.size()));
          state_ = State::kReasoning;
          continue;
        }
        if (std::string_view(markers_.start).starts_with(rest)) return;  // may still be it
        state_ = State::kAnswer;
        continue;
      }
      case State::kReasoning: {
        if (!reasoning_began_) held_.erase(0, FirstNonSpace(held_));
        const size_t end = held_.find(markers_.end);
        if (end != std::string::npos) {
          out->reasoning += TrimEnd(std::string_view(held_).substr(0, end));
          held_.erase(0, end + markers_.end.size());
          state_ = State::kAfterEnd;
          continue;
        }
        // Hold a possible start of the end marker and the whitespace before it.
        size_t n = held_.size() - PartialMarkerAtEnd(held_, markers_.end);
        n = TrimEnd(std::string_view(held_).substr(0, n)).size();
        if (n > 0) {
          out->reasoning.append(held_, 0, n);
          reasoning_began_ = true;
          held_.erase(0, n);
        }
        return;
      }
      case State::kAfterEnd: {
        held_.erase(0, FirstNonSpace(held_));
        if (held_.empty()) return;
        state_ = State::kAnswer;
        continue;
      }
    }
  }
}

void ReasoningSplitter::Flush(Parts* out) {
  switch (state_) {
    case State::kStart:
    case State::kAnswer: out->content += held_; break;
    case State::kReasoning: out->reasoning += TrimEnd(held_); break;
    case State::kAfterEnd: break;
  }
  held_.clear();
}

void ReasoningSplitter::EndReasoning(Parts* out) {
  if (state_ == State::kReasoning || state_ == State::kStart) {
    if (state_ == State::kReasoning) out->reasoning += TrimEnd(held_);
    held_.clear();
    state_ = State::kAfterEnd;
  }
}

SequenceOutput ReasoningTap::Take(const SequenceOutput& out, std::string* reasoning) {
  if (!on_ || constrained_) return out;
  const bool triggered = out.constrained_from >= 0;
  const size_t from = triggered
                          ? std::min(static_cast<size_t>(out.constrained_from), out.text.size())
                          : out.text.size();
  ReasoningSplitter::Parts parts;
  splitter_.Push(std::string_view(out.text).substr(0, from), &parts);
  if (triggered) {
    constrained_ = true;
    if (after_reasoning_) {
      splitter_.EndReasoning(&parts);
    } else {
      splitter_.Flush(&parts);
    }
  } else if (out.finished) {
    splitter_.Flush(&parts);
  }
  *reasoning += parts.reasoning;
  SequenceOutput rest = out;
  rest.text = parts.content;
  rest.text.append(out.text, from);
  rest.constrained_from =
      triggered && !after_reasoning_ ? static_cast<int64_t>(parts.content.size()) : -1;
  return rest;
}

}  // namespace brisk
