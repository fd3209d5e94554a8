#include "grammar/matcher.h"

#include <algorithm>

#include "grammar/matcher_phases.h"
#include "grammar/string_lexer.h"

namespace brisk {

MatchFrame StartFrame(uint32_t node) {
  MatchFrame f;
  f.node = node;
  return f;
}

GrammarMatcher::GrammarMatcher(const JsonGrammar* grammar) : g_(grammar) {
  frames_.push_back(StartFrame(grammar->root));
  ends_.push_back(1);
}

void GrammarMatcher::CopyFrom(const GrammarMatcher& other) {
  g_ = other.g_;
  frames_.assign(other.frames_.begin(), other.frames_.end());
  ends_.assign(other.ends_.begin(), other.ends_.end());
}

bool GrammarMatcher::Advance(uint8_t byte) {
  next_frames_.clear();
  next_ends_.clear();
  uint32_t begin = 0;
  for (uint32_t end : ends_) {
    work_.assign(frames_.begin() + begin, frames_.begin() + end);
    Step(work_, byte);
    begin = end;
  }
  if (next_ends_.empty()) return false;
  if (next_ends_.size() > 1) DedupeNext();
  if (next_ends_.size() > kMaxThreads) return false;
  frames_.swap(next_frames_);
  ends_.swap(next_ends_);
  return true;
}

bool GrammarMatcher::AdvanceBytes(std::string_view bytes) {
  GrammarMatcher copy;
  copy.CopyFrom(*this);
  for (char c : bytes)
    if (!copy.Advance(static_cast<uint8_t>(c))) return false;
  CopyFrom(copy);
  return true;
}

void GrammarMatcher::Emit(const std::vector<MatchFrame>& stack) {
  next_frames_.insert(next_frames_.end(), stack.begin(), stack.end());
  next_ends_.push_back(static_cast<uint32_t>(next_frames_.size()));
}

void GrammarMatcher::DedupeNext() {
  // Threads are few; quadratic compare, keeping first occurrences in order.
  std::vector<MatchFrame> frames;
  std::vector<uint32_t> ends;
  const auto thread = [&](const std::vector<MatchFrame>& fs, const std::vector<uint32_t>& es,
                          size_t i) {
    const uint32_t b = i == 0 ? 0 : es[i - 1];
    return std::pair<const MatchFrame*, const MatchFrame*>(fs.data() + b, fs.data() + es[i]);
  };
  for (size_t i = 0; i < next_ends_.size(); ++i) {
    auto [b, e] = thread(next_frames_, next_ends_, i);
    bool dup = false;
    for (size_t j = 0; j < ends.size() && !dup; ++j) {
      auto [ob, oe] = thread(frames, ends, j);
      dup = (oe - ob) == (e - b) && std::equal(b, e, ob);
    }
    if (dup) continue;
    frames.insert(frames.end(), b, e);
    ends.push_back(static_cast<uint32_t>(frames.size()));
  }
  next_frames_.swap(frames);
  next_ends_.swap(ends);
}

bool GrammarMatcher::CanStartWith(uint32_t node, uint8_t byte, int depth) const {
  const GrammarNode& n = g_->nodes[node];
  switch (n.kind) {
    case NodeKind::kNever: return false;
    case NodeKind::kString: return byte == '"';
    case NodeKind::kNumber: {
      MatchFrame f = StartFrame(node);  // the number's own range check decides '-'
      return StepNumber(f, g_->numbers[n.index], byte).outcome != Outcome::kReject;
    }
    case NodeKind::kLiterals: return g_->literals[n.index].Child(0, byte) != ByteTrie::kNone;
    case NodeKind::kObject: return byte == '{';
    case NodeKind::kArray: {
      const ArraySpec& a = g_->arrays[n.index];
      if (a.separator.empty()) return byte == '[';
      // A bare sequence starts with its first item.
      const uint32_t first = a.prefix.empty() ? a.items : a.prefix[0];
      return first != kNoNode && a.max_items > 0 && depth <= 32 &&
             CanStartWith(first, byte, depth + 1);
    }
    case NodeKind::kUnion:
      if (depth > 32) return true;  // a long alias chain: let the branches decide
      for (uint32_t alt : n.alts)
        if (CanStartWith(alt, byte, depth + 1)) return true;
      return false;
  }
  return false;
}

void GrammarMatcher::ChildDone(MatchFrame& parent) const {
  const GrammarNode& n = g_->nodes[parent.node];
  if (n.kind == NodeKind::kObject) {
    const ObjectSpec& spec = g_->objects[n.index];
    // After an extra key only extra keys may follow.
    parent.a = parent.c == phase::kAdditionalKey || parent.c == phase::kPatternKey
                   ? static_cast<uint32_t>(spec.props.size())
                   : parent.c + 1;
    if (parent.count < spec.count_cap) ++parent.count;
    parent.phase = phase::kObjAfter;
  } else if (n.kind == NodeKind::kArray) {
    ++parent.a;
    parent.phase = phase::kArrAfter;
  }
}

void GrammarMatcher::Step(std::vector<MatchFrame>& st, uint8_t byte) {
  int unions = 0;  // a cycle of aliases ({"$ref": "#"}) matches nothing
  for (;;) {
    if (st.empty()) return;  // the value is complete: nothing may follow
    MatchFrame& f = st.back();
    const GrammarNode& n = g_->nodes[f.node];
    StepResult r{Outcome::kReject};
    switch (n.kind) {
      case NodeKind::kNever: return;
      case NodeKind::kUnion: {
        if (++unions > 64) return;
        // Only the branches this byte can start go on; one of them replaces
        // the union frame in place, several fork the thread.
        uint32_t first = kNoNode;
        int viable = 0;
        for (uint32_t alt : n.alts) {
          if (!CanStartWith(alt, byte)) continue;
          if (viable++ == 0) first = alt;
        }
        if (viable == 0) return;
        if (viable == 1) {
          f = StartFrame(first);
          continue;
        }
        for (uint32_t alt : n.alts) {
          if (!CanStartWith(alt, byte)) continue;
          std::vector<MatchFrame> fork = st;
          fork.back() = StartFrame(alt);
          Step(fork, byte);
        }
        return;
      }
      case NodeKind::kString: r = StepString(f, n, byte); break;
      case NodeKind::kNumber: r = StepNumber(f, g_->numbers[n.index], byte); break;
      case NodeKind::kLiterals: r = StepLiteral(f, g_->literals[n.index], byte); break;
      case NodeKind::kObject: r = StepObject(f, g_->objects[n.index], byte); break;
      case NodeKind::kArray: r = StepArray(f, g_->arrays[n.index], byte); break;
    }
    switch (r.outcome) {
      case Outcome::kReject: return;
      case Outcome::kContinue: Emit(st); return;
      case Outcome::kDone:
        st.pop_back();
        if (!st.empty()) ChildDone(st.back());
        Emit(st);
        return;
      case Outcome::kDoneRefeed:
        st.pop_back();
        if (st.empty()) return;  // trailing bytes after a complete value
        ChildDone(st.back());
        continue;
      case Outcome::kPush:
        if (st.size() >= kMaxDepth) return;
        st.push_back(StartFrame(r.child));
        continue;
    }
  }
}

bool GrammarMatcher::CanFinish(const MatchFrame& f) const {
  const GrammarNode& n = g_->nodes[f.node];
  if (n.kind == NodeKind::kArray) {  // a bare sequence ends after an item
    const ArraySpec& a = g_->arrays[n.index];
    if (a.separator.empty() || f.a < a.min_items) return false;
    return f.phase == phase::kArrAfter ||
           (f.phase == phase::kArrSep && a.separator_end > 0 && f.b == a.separator_end);
  }
  if (n.kind == NodeKind::kLiterals) {
    return f.phase != phase::kStart && g_->literals[n.index].Terminal(f.a) >= 0;
  }
  if (n.kind != NodeKind::kNumber) return false;
  if (f.phase != phase::kNumZero && f.phase != phase::kNumInt && f.phase != phase::kNumFrac &&
      f.phase != phase::kNumExpDigits)
    return false;
  const NumberSpec& s = g_->numbers[n.index];
  const double v = (f.flags & 1) ? -f.num : f.num;
  if (s.has_lo && (s.lo_exclusive ? !(v > s.lo) : !(v >= s.lo))) return false;
  if (s.has_hi && (s.hi_exclusive ? !(v < s.hi) : !(v <= s.hi))) return false;
  return true;
}

bool GrammarMatcher::CanEnd() const {
  uint32_t begin = 0;
  for (uint32_t end : ends_) {
    if (end == begin) return true;  // finished thread
    if (end - begin == 1 && CanFinish(frames_[begin])) return true;
    begin = end;
  }
  return false;
}

bool GrammarMatcher::Finished() const {
  uint32_t begin = 0;
  for (uint32_t end : ends_) {
    if (end != begin) return false;
    begin = end;
  }
  return !ends_.empty();
}

bool GrammarMatcher::PatternStrings(std::vector<PatternTop>* out) const {
  out->clear();
  uint32_t begin = 0;
  for (uint32_t end : ends_) {
    if (end == begin) return false;
    const MatchFrame& f = frames_[end - 1];
    const GrammarNode& n = g_->nodes[f.node];
    PatternTop top;
    if (n.kind == NodeKind::kString && n.pattern != kNoNode && f.phase == phase::kStrBody) {
      top = {&g_->patterns[n.pattern], f, /*canonical=*/false};
    } else if (n.kind == NodeKind::kObject && f.phase == phase::kObjKey) {
      // A key no listed property and no additionalProperties can take: its
      // DFA state is in c (kDfaDead unless StepObject allowed extra keys,
      // maxProperties included).
      const ObjectSpec& spec = g_->objects[n.index];
      const uint32_t np = static_cast<uint32_t>(spec.props.size());
      if (spec.key_pattern == kNoNode || spec.additional != kNoNode || f.c == kDfaDead ||
          spec.first_required_from[f.a] != np || (f.b != phase::kOffTrie && f.a < np))
        return false;
      MatchFrame key;
      key.b = f.c;
      key.lex = f.lex, key.lex_aux = f.lex_aux, key.flags = f.flags;
      top = {&g_->patterns[spec.key_pattern], key, /*canonical=*/true};
    } else {
      return false;
    }
    if (std::find(out->begin(), out->end(), top) == out->end()) out->push_back(top);
    begin = end;
  }
  return !out->empty();
}

int64_t GrammarMatcher::PlainStringBudget() const {
  // Plain text never splits a thread nor moves it off the string, so the
  // token is accepted iff the thread with the largest budget takes it.
  int64_t budget = -1;
  uint32_t begin = 0;
  for (uint32_t end : ends_) {
    if (end == begin) return -1;  // a finished value: nothing may follow
    const int64_t b = PlainBudgetOf(frames_[end - 1]);
    if (b < 0) return -1;
    budget = std::max(budget, b);
    begin = end;
  }
  return budget;
}

int64_t GrammarMatcher::PlainBudgetOf(const MatchFrame& f) const {
  if (f.lex != string_lexer::kNormal) return -1;
  const GrammarNode& n = g_->nodes[f.node];
  if (n.kind == NodeKind::kString && f.phase == phase::kStrBody && n.pattern == kNoNode) {
    if (n.max_len == kUnbounded) return kUnbounded;
    return static_cast<int64_t>(n.max_len) - f.a;
  }
  if (n.kind == NodeKind::kObject && f.phase == phase::kObjKey) {
    // Off the key trie, or on it while extra keys are allowed (maxProperties
    // included): plain text never closes the key, and every such key stays
    // possible. Off the trie, only an extra key can be alive.
    const ObjectSpec& spec = g_->objects[n.index];
    if (spec.additional == kNoNode) return -1;  // keys follow the listed ones or a pattern
    if (f.b == phase::kOffTrie || ObjectNextMembers(spec, f).extra) return kUnbounded;
  }
  return -1;
}

}  // namespace brisk
